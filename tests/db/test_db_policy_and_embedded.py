"""Table policies in Hudi's vocabulary, and the embedded PostgreSQL of a first run."""
from __future__ import annotations

import os
import pwd
import tempfile
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError
from sqlalchemy import make_url

from tms.db import CompactionStrategy, TablePolicy, TriggerStrategy
from tms.db.embedded import embedded_database_url, find_postgres_bin, start_with_binaries, stop_with_binaries


def test_policy_defaults_are_hudis():
    options = TablePolicy().options()
    assert options["hoodie.compact.inline.trigger.strategy"] == "NUM_COMMITS"
    assert options["hoodie.compact.inline.max.delta.commits"] == 5
    assert options["hoodie.compact.inline.max.delta.seconds"] == 3600
    assert options["hoodie.clustering.plan.strategy.small.file.limit"] == 300 * 1024 * 1024
    assert options["hoodie.cleaner.policy"] == "KEEP_LATEST_COMMITS"
    assert options["hoodie.cleaner.commits.retained"] == 10


def test_policy_changes_store_only_what_was_set():
    policy = TablePolicy.from_stored({"hoodie.compact.inline.trigger.strategy": "NUM_OR_TIME"})
    changed = policy.merged({"hoodie.compaction.strategy": "BoundedIOCompactionStrategy",
                             "hoodie.compact.inline.trigger.strategy": None})
    assert changed.compaction_strategy is CompactionStrategy.BOUNDED_IO
    assert changed.trigger_strategy is TriggerStrategy.NUM_COMMITS
    assert changed.explicit() == {"hoodie.compaction.strategy": CompactionStrategy.BOUNDED_IO.value}
    sorted_policy = policy.merged({"hoodie.clustering.plan.strategy.sort.columns": "city, ts"})
    assert sorted_policy.sort_columns == ["city", "ts"]


@pytest.mark.parametrize("bad", [{"hoodie.compact.inline.max.delta.commits": 0},
                                 {"hoodie.unknown.option": 1},
                                 {"hoodie.cleaner.policy": "KEEP_EVERYTHING"}])
def test_policy_rejects_bad_options(bad):
    with pytest.raises(ValidationError) as info:
        TablePolicy().merged(bad)
    assert info.value.errors()[0]["loc"] == (next(iter(bad)),)


def _server_answers(url: str) -> bool:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT 1").fetchone() == (1,)


def test_embedded_database_with_pgserver(tmp_path):
    url = embedded_database_url(tmp_path / "data")
    assert make_url(url).database == "tms" and _server_answers(url)
    assert embedded_database_url(tmp_path / "data") == url  # reused, not started twice


def _can_run_binaries() -> bool:
    if find_postgres_bin() is None:
        return False
    try:  # as root, the server must run as the postgres user
        return os.geteuid() != 0 or bool(pwd.getpwnam("postgres"))
    except KeyError:
        return False


@pytest.mark.skipif(not _can_run_binaries(), reason="no PostgreSQL binaries (or no postgres user) here")
def test_embedded_database_with_the_machines_binaries():
    # Not under pytest's tmp_path: its parents may be private to root, and the server may run as postgres.
    with tempfile.TemporaryDirectory(prefix="tms-pg-") as folder:
        os.chmod(folder, 0o755)
        pgdata = Path(folder) / "pgdata"
        try:
            assert _server_answers(start_with_binaries(pgdata))
            assert _server_answers(start_with_binaries(pgdata))  # already running: reused
        finally:
            stop_with_binaries(pgdata)
