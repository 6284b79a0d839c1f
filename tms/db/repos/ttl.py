"""The tasks of tables' time to live (record TTL, partition TTL), requested by the manager's leader on schedule:
at most one of them active per table; and what the schedule and a table's page read of them."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from tms.table_service import TTL_SERVICES, TableService
from tms.task_payload import TtlRequest

from ..models import RegisteredTable, Task
from ..records import TableRecord, TaskRecord, tables_of, tasks_of
from .requested import active_task, database_now, request_task, requested_at

_TTL_SERVICES = [s.value for s in TTL_SERVICES]


class TtlTaskRepo:
    def __init__(self, session: Session):
        self.session = session

    def now(self) -> datetime:
        """The database's clock."""
        return database_now(self.session)

    def tables_with_ttl(self) -> list[TableRecord]:
        """Enabled tables whose policy sets a record or a partition TTL option (the caller reads the policy)."""
        policies = RegisteredTable.policies
        return tables_of(self.session.scalars(
            select(RegisteredTable).where(RegisteredTable.enabled.is_(True),
                                          or_(policies["tms.ttl.days"].astext != "",
                                              policies["hoodie.partition.ttl.days.retain"].astext != ""))
            .order_by(RegisteredTable.id)))

    def active(self, table_id: int) -> TaskRecord | None:
        return active_task(self.session, table_id, _TTL_SERVICES)

    def last_requested(self, table_id: int) -> dict[str, datetime]:
        """Each TTL service's latest request of the table (the requester's clock)."""
        requested = requested_at()
        return {service: at for service, at in self.session.execute(
            select(Task.service, func.max(requested)).where(Task.table_id == table_id, Task.service.in_(_TTL_SERVICES))
            .group_by(Task.service)).all()}

    def recent(self, table_id: int, limit: int = 10) -> list[TaskRecord]:
        """The table's newest TTL tasks, newest first."""
        return tasks_of(self.session.scalars(select(Task).where(
            Task.table_id == table_id, Task.service.in_(_TTL_SERVICES)).order_by(Task.id.desc()).limit(limit)))

    def request(self, table_id: int, service: TableService, request: TtlRequest, *, priority: int = 0,
                queue: str | None = None, now: datetime | None = None) -> TaskRecord:
        """Record a runnable TTL task; ConflictError while another TTL task of the table is active. Its instant
        names the request; the instant it writes on the timeline is in its result."""
        return request_task(self.session, table_id, service.value, request, scope=_TTL_SERVICES, kind="TTL",
                            priority=priority, queue=queue, now=now)
