"""The planner under the writers' lock: a table whose concurrency options name a lock provider is planned
while that lock is held, waiting for another process that holds it and giving up (an alert, nothing written)
after its retries; each cached table keeps one transaction manager, replaced when the options change and
closed when the cache drops the table."""
from __future__ import annotations

import json
import subprocess
import sys

from planner_db_support import TrackedTable, pending_plans, planner
from planning_support import rec
from support import REPO

from tms.db import AlertRepo, TableRepo

CONTENDER = REPO / "tests" / "hudi" / "locks" / "lock_contender.py"
EVERY_2 = {"hoodie.compact.inline.max.delta.commits": 2}


def _lock(tmp_path, **extra) -> dict[str, str]:
    return {"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
            "hoodie.write.lock.filesystem.path": str(tmp_path / "lock"), "hoodie.write.lock.wait_time_ms": "200",
            "hoodie.write.lock.client.num_retries": "1", "hoodie.write.lock.client.wait_time_ms_between_retry": "50",
            **extra}


def _set_options(db, table_id: int, options: dict[str, str]) -> None:
    with db.transaction() as session:
        TableRepo(session).update(table_id, concurrency_options=options)


def test_a_pass_waits_for_the_lock_and_writes_nothing_without_it(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_2)
    options = _lock(tmp_path)
    _set_options(db, t.id, options)
    p = planner(db)
    holder = subprocess.Popen([sys.executable, str(CONTENDER), "--base", str(t.path), "--options",
                               json.dumps(options), "--hold-forever"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t.write([rec(i, 10) for i in range(6)], "insert")
        t.write([rec(i, 20) for i in range(3)])  # the second delta commit: a compaction is due
        assert p.handle_events(t.id)
        assert pending_plans(t.table()) == [] and t.tasks() == [], "nothing planned without the lock"
        with db.transaction() as session:
            [alert] = AlertRepo(session).find(table_id=t.id)[0]
        assert alert.kind == "table_unreadable" and "unable to acquire the table lock after 2 attempt(s)" in \
            alert.message
    finally:
        holder.kill()
        holder.wait()
    (tmp_path / "lock" / "lock").unlink()  # the killed holder's lock file (no expiry set)

    assert p.reconcile(t.id)
    [task] = t.tasks()
    assert pending_plans(t.table()) == [(task.instant, "compaction")]
    assert task.instant > max(i.timestamp for i in t.table().timeline.instants() if i.timestamp != task.instant)
    assert not (tmp_path / "lock" / "lock").exists(), "the pass released the lock"


def test_one_transaction_manager_per_cached_table_closed_when_dropped(db, tmp_path, monkeypatch):
    first = TrackedTable(db, tmp_path / "a", policies=EVERY_2)
    second = TrackedTable(db, tmp_path / "b", policies=EVERY_2)
    _set_options(db, first.id, _lock(tmp_path))
    p = planner(db)
    p.cache.capacity = 1
    closed = []
    with db.transaction() as session:
        cached = p.cache.get(TableRepo(session).get(first.id))
        assert cached.transactions.takes_lock
        assert p.cache.get(TableRepo(session).get(first.id)) is cached, "kept between passes"
        monkeypatch.setattr(cached.transactions, "close", lambda: closed.append("options changed"))
    _set_options(db, first.id, _lock(tmp_path, **{"hoodie.write.lock.wait_time_ms": "300"}))
    with db.transaction() as session:
        reopened = p.cache.get(TableRepo(session).get(first.id))
        assert reopened is not cached and reopened.transactions.config.retries.wait_time_ms == 300
        assert closed == ["options changed"]
        monkeypatch.setattr(reopened.transactions, "close", lambda: closed.append("evicted"))
        assert not p.cache.get(TableRepo(session).get(second.id)).transactions.takes_lock  # a single writer
    assert closed == ["options changed", "evicted"]


def test_a_provider_that_cannot_be_opened_is_the_table_s_alert(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_2)
    _set_options(db, t.id, _lock(tmp_path, **{"hoodie.write.lock.filesystem.path": "s3://bucket/locks"}))
    t.write([rec(i, 10) for i in range(6)], "insert")
    assert planner(db).reconcile(t.id)
    with db.transaction() as session:
        [alert] = AlertRepo(session).find(table_id=t.id)[0]
    assert "TMS takes the file-system lock only on local filesystems" in alert.message
    assert t.tasks() == []
