"""The tasks of tables' backups (backup, backup-clean, restore of a version): at most one active per table,
so a backup-clean never deletes what a running backup is about to name; and what the manager's schedule and
alerts read of them."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tms.table_service import BACKUP_SERVICES, TableService
from tms.task_payload import BackupRequest

from ..models import RegisteredTable, Task
from ..records import TableRecord, TaskRecord, tables_of, task_of, tasks_of
from ..states import TaskState
from .requested import active_task, database_now, request_task, requested_at
from .tasks import TaskRepo

S = TaskState
_BACKUP_SERVICES = [s.value for s in BACKUP_SERVICES]


@dataclass(frozen=True)
class BackupHistory:
    """What the schedule and the alerts need of one table's backups, by the time each was requested."""
    first_requested: datetime | None
    last_requested: datetime | None
    last_succeeded_request: datetime | None     # created_at of the newest backup that succeeded
    last_succeeded_finish: datetime | None
    last_clean_requested: datetime | None
    active: TaskRecord | None                   # the backup, backup-clean or restore running or waiting
    failed_for_good: TaskRecord | None          # the newest backup, if it failed and will not be retried


class BackupTaskRepo:
    def __init__(self, session: Session):
        self.session = session
        self.tasks = TaskRepo(session)

    def now(self) -> datetime:
        """The database's clock."""
        return database_now(self.session)

    def tables_with_backups(self) -> list[TableRecord]:
        """Enabled tables whose policy names a backup destination."""
        return tables_of(self.session.scalars(
            select(RegisteredTable).where(RegisteredTable.enabled.is_(True),
                                          RegisteredTable.policies["tms.backup.destination"].astext != "")
            .order_by(RegisteredTable.id)))

    def active(self, table_id: int) -> TaskRecord | None:
        return active_task(self.session, table_id, _BACKUP_SERVICES)

    def history(self, table_id: int) -> BackupHistory:
        backup = (Task.table_id == table_id, Task.service == TableService.BACKUP.value)
        requested = requested_at()
        first, last = self.session.execute(select(func.min(requested), func.max(requested)).where(*backup)).one()
        done = self.session.execute(select(requested, Task.finished_at).where(
            *backup, Task.state == S.SUCCEEDED.value).order_by(requested.desc()).limit(1)).first()
        clean = self.session.scalar(select(func.max(requested)).where(
            Task.table_id == table_id, Task.service == TableService.BACKUP_CLEAN.value))
        newest = task_of(self.session.scalar(select(Task).where(*backup).order_by(Task.id.desc()).limit(1)))
        failed = newest if newest is not None and newest.state == S.FAILED.value \
            and newest.next_attempt_at is None else None
        return BackupHistory(first, last, done[0] if done else None, done[1] if done else None, clean,
                             self.active(table_id), failed)

    def recent(self, table_id: int, limit: int = 20) -> list[TaskRecord]:
        """The table's newest backup tasks (all three services), newest first."""
        return tasks_of(self.session.scalars(select(Task).where(
            Task.table_id == table_id, Task.service.in_(_BACKUP_SERVICES)).order_by(Task.id.desc()).limit(limit)))

    def succeeded_restores_since(self, since: datetime) -> list[TaskRecord]:
        return tasks_of(self.session.scalars(select(Task).where(
            Task.service == TableService.BACKUP_RESTORE.value, Task.state == S.SUCCEEDED.value,
            Task.finished_at >= since).order_by(Task.id)))

    def request(self, table_id: int, service: TableService, request: BackupRequest, *, priority: int = 0,
                queue: str | None = None, now: datetime | None = None) -> TaskRecord:
        """Record a runnable backup task of the table; ConflictError while another one is active (see
        requested.request_task). Its instant is the request's time: it names the request, not a timeline
        instant."""
        return request_task(self.session, table_id, service.value, request, scope=_BACKUP_SERVICES, kind="backup",
                            priority=priority, queue=queue, now=now)
