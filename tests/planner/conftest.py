"""Fixtures of the planner's service-side tests: one scratch PostgreSQL database per session (see
tms.db.testing), emptied before each test."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from tms.db import Base, Database
from tms.db.testing import scratch_database


@pytest.fixture(scope="session")
def planner_database_url():
    with scratch_database() as url:
        yield url


@pytest.fixture(scope="session")
def planner_database(planner_database_url):
    database = Database(planner_database_url, pool_size=10)
    yield database
    database.dispose()


@pytest.fixture
def db(planner_database) -> Database:
    """The session's database, with every table emptied."""
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with planner_database.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    return planner_database
