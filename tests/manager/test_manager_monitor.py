"""The alert rules as the leader evaluates them: one alert per type and subject, counted while its condition
holds and resolved by itself when it clears."""
from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import text, update

from manager.leadership import LeaderLease
from manager.monitor import MonitorContext, evaluate
from tms.config import Settings
from tms.db import AlertRepo, TableRepo, Task, TaskRepo, TaskState

S = TaskState


def _leader(db) -> tuple[LeaderLease, int]:
    lease = LeaderLease(db, "monitor-test", lease_seconds=30, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    assert epoch is not None
    return lease, epoch


def _table(db) -> int:
    with db.transaction() as session:
        return TableRepo(session).register(base_path="/nowhere/t", name="t", database="d",
                                           table_type="MERGE_ON_READ", table_version=6).id


def _alerts(db, kind: str):
    with db.transaction() as session:
        return AlertRepo(session).find(kind=kind)[0]


def test_a_hold_too_long_fires_once_counts_its_sightings_and_resolves_when_released(db):
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table_id, action="compaction", instant="20260101000000000",
                                           state=S.BLOCKED, blockers=["20251231000000000"])
    ctx = MonitorContext(Settings(monitor_hold_seconds=0.05), datetime.now(UTC), {})
    time.sleep(0.1)
    evaluate(lease, epoch, ctx)
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "held_too_long")
    assert (alert.state, alert.count, alert.subject, alert.task_id) == ("firing", 2, f"task:{task.id}", task.id)
    assert "20251231000000000" in alert.message
    with db.transaction() as session:
        TaskRepo(session).transition(task.id, expected_state=S.BLOCKED, expected_version=task.version,
                                     to=S.RUNNABLE, blockers=[])
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "held_too_long")
    assert alert.state == "resolved"


def test_a_backlog_growing_at_each_evaluation_fires_and_resolves_when_it_stops(db):
    lease, epoch = _leader(db)
    table_id = _table(db)
    ctx = MonitorContext(Settings(), datetime.now(UTC), {})
    for n in range(4):
        with db.transaction() as session:
            TaskRepo(session).create(table_id=table_id, action="clean", instant=f"2026010100000{n}000",
                                     state=S.RUNNABLE)
        evaluate(lease, epoch, ctx)
        assert bool(_alerts(db, "backlog_growing")) == (n == 3), n  # rising three times: four evaluations
    [alert] = _alerts(db, "backlog_growing")
    assert alert.subject == f"table:{table_id}" and "pending plans" in alert.message
    evaluate(lease, epoch, ctx)  # no new plan: not rising any more
    assert [a.state for a in _alerts(db, "backlog_growing")] == ["resolved"]


def test_a_running_task_predicted_past_its_timeout_is_warned_of_before_it_times_out(db):
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        tasks = TaskRepo(session)
        for n, seconds in enumerate((100, 120, 110)):  # history: about 1 s per MB
            done, _ = tasks.create(table_id=table_id, action="compaction", instant=f"2025010100000{n}000",
                                   state=S.RUNNABLE, plan_stats={"total_bytes": 100 * 2**20})
            claimed = tasks.claim(done.id, expected_version=done.version, owner="w", lease_seconds=60)
            tasks.finish(done.id, fencing_token=claimed.fencing_token, succeeded=True)
            session.execute(text("UPDATE tasks SET finished_at = started_at + make_interval(secs => :s) "
                                 "WHERE id = :id"), {"s": seconds, "id": done.id})
        big, _ = tasks.create(table_id=table_id, action="compaction", instant="20260101000000000",
                              state=S.RUNNABLE, plan_stats={"total_bytes": 500 * 2**20})
        small, _ = tasks.create(table_id=table_id, action="compaction", instant="20260101000001000",
                                state=S.RUNNABLE, plan_stats={"total_bytes": 50 * 2**20})
        for t in (big, small):
            tasks.claim(t.id, expected_version=t.version, owner="w", lease_seconds=60)
    # ~550 s predicted for the big one against a 300 s timeout, ~55 s for the small one: only the big warns.
    evaluate(lease, epoch, MonitorContext(Settings(worker_job_timeout_seconds=300), datetime.now(UTC), {}))
    [alert] = _alerts(db, "predicted_timeout")
    assert alert.task_id == big.id and 500 <= alert.details["predicted_seconds"] <= 600


def test_a_task_that_gave_way_to_a_writer_is_not_a_failure_to_alert_on(db):
    """A conflict (the writer won, the plan was rolled back) ends the task FAILED and not retried, as Hudi's
    MVCC promises; only the other failures that are not retried fire task_failed."""
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        ids = {}
        for n, kind in enumerate(("conflict", "missing_files")):
            task, _ = TaskRepo(session).create(table_id=table_id, action="clustering", state=S.FAILED,
                                               instant=f"2026010100000{n}000")
            session.execute(update(Task).where(Task.id == task.id).values(failure_kind=kind, retryable=False))
            ids[kind] = task.id
    evaluate(lease, epoch, MonitorContext(Settings(), datetime.now(UTC), {}))
    assert [a.task_id for a in _alerts(db, "task_failed")] == [ids["missing_files"]]
