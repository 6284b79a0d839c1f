"""The leader's retention of TMS's own history: old rows go in bounded, fenced batches while the service answers,
counted per kind on the manager's metrics; live rows stay."""
from __future__ import annotations

import threading
import time

import httpx
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select, text, update

from manager.metrics import removed_rows_counter
from manager.retention import purge_history
from tms.config import Settings
from tms.db import EventRepo, NewEvent, TableRepo, TaskRepo, TaskState
from tms.db.models import Event, Task
from tms.leadership import LeaderLease, NotLeader

OLD = text("now() - interval '40 days'")


def _history(db, old_events: int, old=OLD) -> tuple[int, list[int]]:
    """A table with `old_events` processed events 40 days old and one recent, and three cancelled backups 40 days
    old followed by a recent one (a backup's task names its request: nothing on the timeline keeps it); the
    recent event's id and the old tasks' ids."""
    with db.transaction() as session:
        table_id = TableRepo(session).register(base_path="/nowhere/t", name="t", database="d",
                                               table_type="MERGE_ON_READ", table_version=6).id
        EventRepo(session).add_many([NewEvent(table_id=table_id, instant=f"{20260101000000000 + i}",
                                              action="deltacommit", state="completed", completion_time=None,
                                              source="api", write_stats=None, extra_metadata=None)
                                     for i in range(old_events + 1)])
        tasks = [TaskRepo(session).create(table_id=table_id, service="backup", instant=f"{20260201000000000 + i}",
                                          state=TaskState.CANCELLED)[0].id for i in range(4)]
        session.execute(update(Event).values(processed_at=func.now()))
        recent = session.scalar(select(func.max(Event.id)))
        session.execute(update(Event).where(Event.id != recent).values(received_at=old))
        session.execute(update(Task).where(Task.id.in_(tasks[:3])).values(created_at=old, updated_at=old))
    return recent, tasks


def _left(db) -> tuple[set[int], set[int]]:
    with db.transaction() as session:
        return set(session.scalars(select(Event.id))), set(session.scalars(select(Task.id)))


def test_old_history_goes_in_bounded_batches_while_the_api_answers(db, service):
    recent, tasks = _history(db, old_events=12)
    lease = LeaderLease(db, "retention-test", lease_seconds=30, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    assert epoch is not None
    registry = CollectorRegistry()
    removed = removed_rows_counter()
    registry.register(removed)
    batches: list[int] = []
    settings = Settings(retention_batch_rows=2, retention_pause_seconds=0.02)
    fenced = lease.fenced

    def counting(e):  # each batch is one fenced transaction
        batches.append(e)
        return fenced(e)

    lease.fenced = counting  # type: ignore[method-assign]
    totals: dict[str, int] = {}
    purge = threading.Thread(target=lambda: totals.update(purge_history(lease, epoch, settings, removed=removed)))
    purge.start()
    reads = []
    while purge.is_alive() or not reads:  # the API answers while the purge runs
        reads.append(httpx.get(f"{service.url}/api/v1/tasks", headers=service.admin, timeout=10).status_code)
    purge.join()

    assert set(reads) == {200}
    assert totals == {"events": 12, "tasks": 3}
    assert _left(db) == ({recent}, {tasks[3]})
    assert len(batches) >= 12 // 2 + 3 // 2, "two rows at most per transaction"
    assert registry.get_sample_value("tms_manager_retention_removed_rows_total", {"kind": "events"}) == 12

    lease.release()
    with pytest.raises(NotLeader):  # a manager that no longer leads removes nothing
        purge_history(lease, epoch, settings)


def test_a_retention_shorter_than_a_day_keeps_what_is_younger(db):
    """A month compressed into an hour (bench/long_life.py), or a busy fleet that keeps hours, not days: the
    retention takes fractions of a day. Rows two hours old go with an hour's retention; the recent ones stay."""
    recent, tasks = _history(db, old_events=3, old=text("now() - interval '2 hours'"))
    lease = LeaderLease(db, "retention-hours", lease_seconds=30, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    assert epoch is not None
    hour, before = 1 / 24, _left(db)
    kept = purge_history(lease, epoch, Settings(retention_days=3 * hour, retention_events_days=3 * hour))
    assert kept == {} and _left(db) == before and len(before[0]) == 4
    removed = purge_history(lease, epoch, Settings(retention_days=hour, retention_events_days=hour))
    assert removed == {"events": 3, "tasks": 3}
    assert _left(db) == ({recent}, {tasks[3]})
    lease.release()


def test_the_leader_runs_the_retention_on_its_schedule(db, start_manager):
    recent, tasks = _history(db, old_events=3)
    manager = start_manager(manager_retention_seconds=0.5, retention_batch_rows=2)
    registry = CollectorRegistry()
    registry.register(manager.retention_removed)

    def removed_tasks() -> float | None:
        return registry.get_sample_value("tms_manager_retention_removed_rows_total", {"kind": "tasks"})

    # The counter moves after the batch's transaction commits: wait for both, then assert both.
    deadline = time.monotonic() + 20
    while (_left(db) != ({recent}, {tasks[3]}) or removed_tasks() != 3) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _left(db) == ({recent}, {tasks[3]})
    assert removed_tasks() == 3
