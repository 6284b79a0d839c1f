"""The tasks of tables' backups (backup, backup-clean, restore of a version): at most one active per table,
so a backup-clean never deletes what a running backup is about to name; and what the manager's schedule and
alerts read of them."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, func, select
from sqlalchemy.orm import Session

from tms.hudi.timeline.instant import format_wall_clock
from tms.table_service import BACKUP_SERVICES, TableService

from ..errors import ConflictError, NotFoundError
from ..models import RegisteredTable, Task
from ..states import TaskState
from .tasks import TaskRepo

S = TaskState
# A backup task in one of these holds the table's backups: no other backup task starts beside it.
ACTIVE = (S.PENDING, S.BLOCKED, S.RUNNABLE, S.RUNNING, S.SUSPENDED)
_BACKUP_ACTIONS = [s.value for s in BACKUP_SERVICES]


def _requested_at() -> Any:
    """When a backup task was requested, on the requester's clock (its plan's `requested_at`: the schedule's, which
    tests set), else when it was recorded."""
    return func.coalesce(Task.plan_stats["requested_at"].astext.cast(DateTime(timezone=True)), Task.created_at)


@dataclass(frozen=True)
class BackupHistory:
    """What the schedule and the alerts need of one table's backups, by the time each was requested."""
    first_requested: datetime | None
    last_requested: datetime | None
    last_succeeded_request: datetime | None     # created_at of the newest backup that succeeded
    last_succeeded_finish: datetime | None
    last_clean_requested: datetime | None
    active: Task | None                         # the backup, backup-clean or restore running or waiting
    failed_for_good: Task | None                # the newest backup, if it failed and will not be retried


class BackupTaskRepo:
    def __init__(self, session: Session):
        self.session = session
        self.tasks = TaskRepo(session)

    def now(self) -> datetime:
        """The database's clock."""
        now = self.session.scalar(select(func.now()))
        assert now is not None
        return now

    def tables_with_backups(self) -> list[RegisteredTable]:
        """Enabled tables whose policy names a backup destination."""
        return list(self.session.scalars(
            select(RegisteredTable).where(RegisteredTable.enabled.is_(True),
                                          RegisteredTable.policies["tms.backup.destination"].astext != "")
            .order_by(RegisteredTable.id)))

    def active(self, table_id: int) -> Task | None:
        return self.session.scalar(select(Task).where(
            Task.table_id == table_id, Task.action.in_(_BACKUP_ACTIONS),
            Task.state.in_([s.value for s in ACTIVE])).order_by(Task.id).limit(1))

    def history(self, table_id: int) -> BackupHistory:
        backup = (Task.table_id == table_id, Task.action == TableService.BACKUP.value)
        requested = _requested_at()
        first, last = self.session.execute(select(func.min(requested), func.max(requested)).where(*backup)).one()
        done = self.session.execute(select(requested, Task.finished_at).where(
            *backup, Task.state == S.SUCCEEDED.value).order_by(requested.desc()).limit(1)).first()
        clean = self.session.scalar(select(func.max(requested)).where(
            Task.table_id == table_id, Task.action == TableService.BACKUP_CLEAN.value))
        newest = self.session.scalar(select(Task).where(*backup).order_by(Task.id.desc()).limit(1))
        failed = newest if newest is not None and newest.state == S.FAILED.value \
            and newest.next_attempt_at is None else None
        return BackupHistory(first, last, done[0] if done else None, done[1] if done else None, clean,
                             self.active(table_id), failed)

    def recent(self, table_id: int, limit: int = 20) -> list[Task]:
        """The table's newest backup tasks (all three services), newest first."""
        return list(self.session.scalars(select(Task).where(
            Task.table_id == table_id, Task.action.in_(_BACKUP_ACTIONS)).order_by(Task.id.desc()).limit(limit)))

    def succeeded_restores_since(self, since: datetime) -> list[Task]:
        return list(self.session.scalars(select(Task).where(
            Task.action == TableService.BACKUP_RESTORE.value, Task.state == S.SUCCEEDED.value,
            Task.finished_at >= since).order_by(Task.id)))

    def request(self, table_id: int, action: TableService, plan: dict[str, Any], *, priority: int = 0,
                queue: str | None = None, now: datetime | None = None) -> Task:
        """Record a runnable backup task of the table; ConflictError while another one is active. The table's
        row is locked meanwhile, so two requests never both pass the check. `now`: the requester's clock (default
        the database's), recorded as the plan's `requested_at`. Its instant is the request's time (milliseconds,
        unique among the table's tasks): it names the request, not a timeline instant."""
        table = self.session.get(RegisteredTable, table_id, with_for_update=True, populate_existing=True)
        if table is None:
            raise NotFoundError(f"no table with id {table_id}")
        active = self.active(table_id)
        if active is not None:
            raise ConflictError(f"table {table.name} has a {active.action} task ({active.id}, {active.state}) "
                                "in progress; one backup task runs at a time")
        at = now or self.now()
        plan = {**plan, "requested_at": at.isoformat()}
        now = self.now()  # the instant: the database's time of the request, as the task's other times
        while True:
            instant = format_wall_clock(now.astimezone(UTC).replace(tzinfo=None))
            if self.tasks.for_instant(table_id, instant) is None:
                break
            now += timedelta(milliseconds=1)
        task, _ = self.tasks.create(table_id=table_id, action=action.value, instant=instant, state=S.RUNNABLE,
                                    priority=priority, queue=queue, plan_stats=plan, planned_by_tms=True)
        return task
