"""Helpers of the worker tests: tables written by the writer (posting Hudi's callbacks to the service) with
the model of their rows; the planner's step from a table to task rows; waiting for tasks to end."""
from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import table_model
from support import TIMEOUT_SCALE
from table_model import CITIES, COLUMNS, key, rec  # noqa: F401 (re-exported to the tests)

from tms.db import Database, TableRepo, TaskRecord, TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.schedule import schedule
from tms.task_payload import PlanStatistics

FINAL = {TaskState.SUCCEEDED, TaskState.FAILED, TaskState.CANCELLED}


class ModelledTable(table_model.ModelledTable):
    """A modelled table whose commits post Hudi's callbacks to `service`."""

    def __init__(self, path: Path, table_type: str, version: int, service=None, **writer_options):
        callbacks = {"callback_url": service.callback_url, "callback_key": service.callback_key} if service else {}
        super().__init__(path, table_type, version, **callbacks, **writer_options)


def write_history(t: ModelledTable, commits: int = 3) -> None:
    """Inserts, then updates (some losing under event-time ordering) and deletes."""
    t.write([rec(i, 10) for i in range(30)], "insert")
    for n in range(1, commits):
        t.write([rec(i, 10 + n * 10) for i in range(n, 30, 3)] + [rec(i, 5, "older") for i in range(n, 4)])
    t.write([key(i) for i in range(20, 23)], "delete")


def register(service, path: Path, **policies) -> int:
    """Register the table through the API with these policy options (Hudi names)."""
    response = httpx.post(f"{service.url}/api/v1/tables", headers=service.admin, timeout=30,
                          json={"base_path": str(path), "policies": policies})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def plan(database: Database, table_id: int, action: str) -> list[int]:
    """The planner's step for one table: sync held plans (a held task becomes runnable when its blockers
    resolved), plan `action` under the table's policy, and record a task per plan. The task ids planned."""
    with database.transaction() as session:
        row = TableRepo(session).get(table_id)
        base_path, policy, priority = row.base_path, row.policy, row.priority
    result = schedule(HudiTable.load(base_path), action, policy, datetime.now(UTC))
    with database.transaction() as session:
        tasks = TaskRepo(session)
        for tc, blockers in result.synced.items():
            task = tasks.for_instant(table_id, tc)
            if task is not None and task.state == TaskState.BLOCKED and not blockers:
                tasks.transition(task.id, expected_state=TaskState.BLOCKED, expected_version=task.version,
                                 to=TaskState.RUNNABLE, blockers=[])
        created = []
        for p in result.planned:
            stats = PlanStatistics(operations=p.stats.operations, operation_bytes=p.stats.operation_bytes,
                                   largest_file_group_bytes=p.stats.largest_file_group_bytes)
            task, _ = tasks.create(table_id=table_id, service=p.service, instant=p.instant, priority=priority,
                                   state=TaskState.RUNNABLE if p.runnable else TaskState.BLOCKED,
                                   blockers=p.blockers, payload=stats)
            created.append(task.id)
    return created


def task(database: Database, task_id: int) -> TaskRecord:
    with database.transaction() as session:
        return TaskRepo(session).get(task_id)


def attempts(database: Database, task_id: int):
    with database.transaction() as session:
        return TaskRepo(session).attempts(task_id)


def final_attempt(database: Database, task_id: int):
    """The task's last attempt; any before it must be LOST: a worker starved past its lease on a loaded machine
    loses the attempt and the task runs again, which is the fencing working, not the job failing."""
    *earlier, last = attempts(database, task_id)
    assert all(a.outcome == "LOST" for a in earlier), [(a.outcome, a.error) for a in earlier]
    return last


def wait_for(condition, timeout: float = 60, what: str = "the condition",
             explain: Callable[[], object] | None = None):
    """`condition()` once it is truthy; a timeout fails naming `what`, and what `explain()` tells then."""
    deadline = time.monotonic() + timeout * TIMEOUT_SCALE
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout * TIMEOUT_SCALE:.0f} s waiting for {what}"
                                 + (f": {explain()}" if explain else ""))
        time.sleep(0.1)


def task_story(database: Database, task_ids: list[int]) -> str:
    """Each task's state and its attempts (engine, outcome, error): what a timed-out wait for tasks reports."""
    stories = []
    for task_id in task_ids:
        t = task(database, task_id)
        tried = [f"{a.engine}:{a.outcome}" + (f" ({a.error[:300]})" if a.error else "")
                 for a in attempts(database, task_id)]
        stories.append(f"task {task_id} {t.state} attempts {tried}")
    return "; ".join(stories)


def wait_until_final(database: Database, task_id: int, timeout: float = 60) -> TaskRecord:
    def final():
        t = task(database, task_id)
        return t if TaskState(t.state) in FINAL else None
    return wait_for(final, timeout, f"task {task_id} to end", lambda: task_story(database, [task_id]))


def processes_with(*words: str) -> list[int]:
    """Pids of this machine's processes whose command line contains every one of `words`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if all(w in cmdline for w in words):
            found.append(int(proc.name))
    return found
