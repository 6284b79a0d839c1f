"""Archival as a task: requested through the API (`tms trigger TABLE --service archive`), run by a worker as a
Python job under the task's lease and fence; the instants Hudi's rule archives leave the active timeline for the
LSM timeline (`.hoodie/timeline/history/`), the attempt's result says how many, and the table reads back the
same rows (TMS's reader and hudi-rs)."""
from __future__ import annotations

import httpx
from support import hudi_rs_table, rows
from table_model import COLUMNS
from worker_support import ModelledTable, attempts, rec, register, wait_for, wait_until_final

from tms.db import InstanceRepo, TaskState
from tms.hudi.timeline.archived import ArchivedTimeline

# keep 2..4 commits; the cleaner retains 1 (so it does not widen the limits)
SMALL = {"hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4, "hoodie.cleaner.commits.retained": 1}


def test_a_worker_archives_the_timeline_and_the_table_reads_the_same(tmp_path, service, db, local_queue,
                                                                      start_worker):
    local_queue()
    table, table_id = _over_its_limit(tmp_path, service)
    before = rows(hudi_rs_table(table.path), COLUMNS)
    completed = [i.timestamp for i in table.table().timeline.completed()]

    answer = httpx.post(f"{service.url}/api/v1/tables/{table_id}:plan", json={"service": "archive"},
                        headers=service.admin, timeout=30)
    assert answer.status_code == 200, answer.text
    [task] = answer.json()["tasks"]
    assert (task["service"], task["plan_stats"]["archive_through"]) == ("archive", completed[3])
    start_worker()
    done = wait_until_final(db, task["id"], timeout=120)
    assert done.state == TaskState.SUCCEEDED, done.error
    result = attempts(db, task["id"])[-1].result
    assert (result["archived"], result["archived_through"], result["metadata_archived"]) == (4, completed[3], 0)
    assert result["files_removed"] == 12  # requested, inflight and completed of each

    archived = table.table()
    assert [i.timestamp for i in archived.timeline.completed()] == completed[4:]
    history = ArchivedTimeline(archived.storage, archived.config.timeline_dir)
    assert all(history.completion_time(ts) for ts in completed[:4])  # in the LSM timeline, as Hudi reads it
    assert rows(hudi_rs_table(table.path), COLUMNS) == before == rows(hudi_rs_table(table.path), COLUMNS)
    table.check()

    again = httpx.post(f"{service.url}/api/v1/tables/{table_id}:plan", json={"service": "archive"},
                       headers=service.admin, timeout=30)
    assert (again.status_code, again.json()["tasks"]) == (200, [])  # within the limit now: nothing planned


def test_an_idle_worker_claims_a_requested_archival_at_once_not_at_its_next_poll(tmp_path, service, db, local_queue,
                                                                                  start_worker):
    local_queue()
    _, table_id = _over_its_limit(tmp_path, service)
    worker = start_worker(worker_poll_seconds=600)  # it polls once at start, then only a notification wakes it
    wait_for(lambda: _turned(db, worker.id), what="the worker's first turn (its heartbeat follows it)")
    answer = httpx.post(f"{service.url}/api/v1/tables/{table_id}:plan", json={"service": "archive"},
                        headers=service.admin, timeout=30)
    [task] = answer.json()["tasks"]
    done = wait_until_final(db, task["id"], timeout=120)
    assert done.state == TaskState.SUCCEEDED, done.error
    assert [a.fencing_token for a in attempts(db, task["id"])] == [1]


def _over_its_limit(tmp_path, service) -> tuple[ModelledTable, int]:
    """A COPY_ON_WRITE v8 table of 6 commits, registered with archival limits of 2..4 commits."""
    table = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    for n in range(6):
        table.write([rec(i, 10 + n) for i in range(n, n + 3)])
    return table, register(service, table.path, **SMALL)


def _turned(db, instance_id: str) -> bool:
    with db.transaction() as session:
        return any(i.id == instance_id and "slots" in i.info for i in InstanceRepo(session).list())
