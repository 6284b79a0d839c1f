"""Recording a task whose instant names its request, not a timeline instant (tms.table_service.REQUESTED_SERVICES:
backups, TTL): at most one active per table within its scope of services, its instant the database's time of the
request, unique among the table's tasks."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, func, select
from sqlalchemy.orm import Session

from tms.hudi.timeline.instant import format_wall_clock
from tms.task_payload import RequestBody

from ..errors import ConflictError, NotFoundError
from ..models import RegisteredTable, Task
from ..records import TaskRecord, task_of
from ..states import TaskState
from .tasks import TaskRepo

S = TaskState
# A requested task in one of these holds its scope: no other task of the scope starts beside it.
ACTIVE = (S.PENDING, S.BLOCKED, S.RUNNABLE, S.RUNNING, S.SUSPENDED)


def requested_at() -> Any:
    """When a requested task was requested, on the requester's clock (its plan's `requested_at`: the schedule's,
    which tests set), else when it was recorded."""
    return func.coalesce(Task.plan_stats["requested_at"].astext.cast(DateTime(timezone=True)), Task.created_at)


def database_now(session: Session) -> datetime:
    now = session.scalar(select(func.now()))
    assert now is not None
    return now


def active_task(session: Session, table_id: int, scope: Sequence[str]) -> TaskRecord | None:
    """The table's task of one of the services `scope` that is running or waiting, if any."""
    return task_of(session.scalar(select(Task).where(
        Task.table_id == table_id, Task.service.in_(list(scope)),
        Task.state.in_([s.value for s in ACTIVE])).order_by(Task.id).limit(1)))


def request_task(session: Session, table_id: int, service: str, request: RequestBody, *, scope: Sequence[str],
                 kind: str, priority: int = 0, queue: str | None = None, now: datetime | None = None) -> TaskRecord:
    """Record a runnable task of `service`; ConflictError while a task of `scope` (a `kind` of task) is active.
    The table's row is locked meanwhile, so two requests never both pass the check. `now`: the requester's
    clock (default the database's), recorded as the request's `requested_at`."""
    table = session.get(RegisteredTable, table_id, with_for_update=True, populate_existing=True)
    if table is None:
        raise NotFoundError(f"no table with id {table_id}")
    active = active_task(session, table_id, scope)
    if active is not None:
        raise ConflictError(f"table {table.name} has a {active.service} task ({active.id}, {active.state}) "
                            f"in progress; one {kind} task runs at a time")
    tasks = TaskRepo(session)
    request = request.model_copy(update={"requested_at": (now or database_now(session)).isoformat()})
    at = database_now(session)  # the instant: the database's time of the request, as the task's other times
    while True:
        instant = format_wall_clock(at.astimezone(UTC).replace(tzinfo=None))
        if tasks.for_instant(table_id, instant) is None:
            break
        at += timedelta(milliseconds=1)
    task, _ = tasks.create(table_id=table_id, service=service, instant=instant, state=S.RUNNABLE,
                           priority=priority, queue=queue, payload=request, planned_by_tms=True)
    return task
