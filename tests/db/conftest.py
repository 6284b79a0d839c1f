"""Fixtures for the database layer (the scratch database and `db` come from tests/conftest.py)."""
from __future__ import annotations

import pytest

from tms.db import TableRepo


@pytest.fixture
def table_id(db) -> int:
    """A registered table row (its base path need not exist for the database layer)."""
    with db.transaction() as session:
        return TableRepo(session).register(base_path="/data/t1", name="t1", database="default",
                                           table_type="MERGE_ON_READ", table_version=6).id
