"""Fixtures for the database layer: one scratch PostgreSQL database per test session (see
tms.db.testing), emptied before each test."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from tms.db import Base, Database, RegisteredTable
from tms.db.testing import scratch_database


@pytest.fixture(scope="session")
def database_url():
    with scratch_database() as url:
        yield url


@pytest.fixture(scope="session")
def database(database_url):
    db = Database(database_url, pool_size=20)
    yield db
    db.dispose()


@pytest.fixture
def db(database):
    """The session's database, with every table emptied."""
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with database.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    return database


@pytest.fixture
def table_id(db) -> int:
    """A registered table row (its base path need not exist for the database layer)."""
    with db.transaction() as session:
        row = RegisteredTable(base_path="/data/t1", name="t1", database="default", table_type="MERGE_ON_READ",
                              table_version=6)
        session.add(row)
        session.flush()
        return row.id
