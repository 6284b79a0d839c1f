"""TTL runs as scheduled tasks: the manager's leader requests each TTL a table's policy sets (partition TTL first,
then record TTL, each once per tms.ttl.interval.hours), workers run them as jobs (lease, fence, the attempt's
result), the API lists them; rows read back by hudi-rs. A TTL task that fails for good alerts as every task."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text
from support import hudi_rs_table, rows
from table_model import COLUMNS
from worker_support import ModelledTable, attempts, rec, register, wait_until_final

from manager.monitor import MonitorContext, task_failed
from manager.ttl import schedule_ttl
from tms.config import Settings
from tms.db import TaskState, TtlTaskRepo
from tms.db.read_models import MonitorReads
from tms.leadership import LeaderLease
from tms.table_service import TableService
from tms.task_payload import TtlRequest


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def _run(db, lease, epoch, now) -> list[tuple[str, str, dict]]:
    """The TTL tasks the schedule asks for at `now`, each run by the worker to its end."""
    done = []
    for task in schedule_ttl(lease, epoch, now):
        final = wait_until_final(db, task.id, timeout=120)
        done.append((final.service, final.state, attempts(db, task.id)[-1].result or {}))
    return done


@pytest.mark.slow
def test_scheduled_ttl_tasks_delete_expired_partitions_and_records(tmp_path, service, db, local_queue,
                                                                    start_worker):
    local_queue()
    now = datetime.now(UTC)
    table = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    old, new = _ms(now - timedelta(days=40)), _ms(now - timedelta(days=1))
    table.model.commit(table.write([rec(i, old if i % 2 else new) for i in range(12)]))
    table_id = register(service, table.path, **{"tms.ttl.field": "ts", "tms.ttl.days": "30",
                                                "hoodie.partition.ttl.days.retain": "2"})
    start_worker()
    lease = LeaderLease(db, "m", lease_seconds=600, heartbeat_seconds=10)
    epoch = lease.try_acquire()

    # Partitions first: each was written just now, so none has expired; then the records older than 30 days.
    [(action, state, result)] = _run(db, lease, epoch, now)
    assert (action, state, result["instant"]) == (TableService.PARTITION_TTL, TaskState.SUCCEEDED, None)
    [(action, state, result)] = _run(db, lease, epoch, now)
    assert (action, state, result["records"]) == (TableService.TTL, TaskState.SUCCEEDED, 6)
    assert rows(hudi_rs_table(table.path), COLUMNS) == [r for r in table.model.expected() if r["ts"] == new]
    assert _run(db, lease, epoch, now + timedelta(hours=23)) == []  # each once per tms.ttl.interval.hours (24)

    listed = httpx.get(f"{service.url}/api/v1/tasks", params={"table_id": table_id}, headers=service.admin).json()
    assert [t["service"] for t in listed["items"]][:2] == ["ttl", "partition_ttl"]

    # A day later the partitions' last write (the delete commit, just now) is more than 2 days old at +3 days.
    [(action, state, result)] = _run(db, lease, epoch, now + timedelta(days=3))
    assert (action, state) == (TableService.PARTITION_TTL, TaskState.SUCCEEDED)
    assert sorted(result["partitions"]) == sorted({f"city={r['city']}" for r in table.model.expected()})
    assert rows(hudi_rs_table(table.path), COLUMNS) == []


def test_a_ttl_task_that_fails_for_good_alerts(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    table = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    table.write([rec(i, 1) for i in range(4)])
    table_id = register(service, table.path)
    with db.transaction() as session:  # a plan whose field the table does not have: refused by the job
        task = TtlTaskRepo(session).request(table_id, TableService.TTL, TtlRequest(
            policy={"tms.ttl.field": "nope", "tms.ttl.days": 1}, now=datetime.now(UTC).isoformat()))
    start_worker()
    failed = wait_until_final(db, task.id, timeout=120)
    assert failed.state == TaskState.FAILED and "nope" in (failed.error or "")
    with db.transaction() as session:  # its retries exhausted
        session.execute(text("UPDATE tasks SET next_attempt_at = NULL WHERE id = :id"), {"id": task.id})
    with db.transaction() as session:
        sightings = task_failed(MonitorReads(session), MonitorContext(Settings(), datetime.now(UTC), {}))
    assert sightings[f"task:{task.id}"].severity == "critical"
    assert sightings[f"task:{task.id}"].message.startswith(f"ttl {task.instant} failed for good")
