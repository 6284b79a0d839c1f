"""The scale suite's farm: 10,000 registered tables (small real ones on disk), 100,000 tasks and events,
built once for the module in its own scratch database."""
from __future__ import annotations

import pytest
from scale_support import fill_history, make_tables, register

from tms.db import Database
from tms.db.testing import scratch_database

TABLES = 10_000


class Farm:
    def __init__(self, db: Database, url: str, root, paths: list[str], ids: list[int]):
        self.db, self.url, self.root, self.paths, self.ids = db, url, root, paths, ids


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    root = tmp_path_factory.mktemp("farm")
    with scratch_database() as url:
        db = Database(url, pool_size=10)
        paths, facts = make_tables(root, TABLES)
        ids = register(db, paths, facts)
        fill_history(db, tasks_per_table=10, events_per_table=10)
        yield Farm(db, url, root, paths, ids)
        db.dispose()
