"""Migrations: an empty database goes to head and back, the result matches the models, and
processes migrating at the same time do it once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from tms.db import migrate, sqlalchemy_url
from tms.db.models import Base
from tms.db.testing import scratch_database

REPO = Path(__file__).resolve().parents[2]


def _tables(engine) -> set[str]:
    return set(inspect(engine).get_table_names()) - {"alembic_version"}


def test_upgrade_to_head_and_downgrade_to_base():
    with scratch_database(migrated=False) as url:
        engine = create_engine(sqlalchemy_url(url))
        try:
            assert _tables(engine) == set()
            migrate.upgrade(url)
            assert migrate.is_at_head(engine)
            assert _tables(engine) == set(Base.metadata.tables)
            with engine.connect() as conn:  # the migrations build exactly what the models declare
                assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
            migrate.downgrade(url, "base")
            assert _tables(engine) == set()
            assert migrate.current_revision(engine) is None
            migrate.upgrade(url)  # and up again
            assert migrate.is_at_head(engine)
        finally:
            engine.dispose()


def test_concurrent_upgrades_migrate_once():
    # Separate processes, as when several TMS instances start together (Alembic itself is not
    # thread-safe within one process).
    with scratch_database(migrated=False) as url:
        code = "import sys; from tms.db import migrate; migrate.upgrade(sys.argv[1])"
        procs = [subprocess.Popen([sys.executable, "-c", code, url], cwd=REPO, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        assert all(code == 0 for code, _ in results), results
        engine = create_engine(sqlalchemy_url(url))
        assert migrate.is_at_head(engine)
        engine.dispose()
