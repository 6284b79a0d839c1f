"""What the manager's alert rules read (manager/monitor.py): tasks, tables, queues and instances in the states
the rules look for, and the past runs the timeout forecast learns from."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ScalarSelect, cast, func, or_, select
from sqlalchemy.orm import Session, aliased

from tms.table_service import TableService
from tms.task_payload import PlanStatistics, payload_of, statistics_of

from ..models import Instance, RegisteredTable, ResourceQueue, Task
from ..records import InstanceRecord, QueueRecord, TableRecord, TaskRecord, records_of, tables_of, tasks_of
from ..repos.backups import BackupHistory, BackupTaskRepo
from ..repos.engines import RolloutRepo
from ..states import TaskState as S

PENDING = (S.PENDING, S.BLOCKED, S.RUNNABLE, S.RUNNING)


class MonitorReads:
    def __init__(self, session: Session):
        self.session = session

    def now(self) -> datetime:
        """The database clock, which every rule measures ages by."""
        return self.session.execute(select(func.now())).scalar_one()

    def hudi_engine_for(self, row: TableRecord) -> str | None:
        """The Hudi engine running the table's tasks, if one does (RolloutRepo.hudi_engine_for)."""
        return RolloutRepo(self.session).hudi_engine_for(queue=row.queue, database=row.database, table=row.name)

    # --- backups ------------------------------------------------------------------------------------
    def tables_with_backups(self) -> list[TableRecord]:
        return BackupTaskRepo(self.session).tables_with_backups()

    def backup_history(self, table_id: int) -> BackupHistory:
        return BackupTaskRepo(self.session).history(table_id)

    def backup_restores_done_since(self, since: datetime) -> list[TaskRecord]:
        """Restores of a backup version to a new base path that succeeded at or after `since`."""
        return BackupTaskRepo(self.session).succeeded_restores_since(since)

    # --- tasks --------------------------------------------------------------------------------------
    def failed_for_good(self, *, except_kind: str) -> list[TaskRecord]:
        """FAILED tasks the manager will not retry, but those whose failure kind is `except_kind`."""
        return tasks_of(self.session.scalars(select(Task).where(Task.state == S.FAILED, Task.next_attempt_at.is_(None),
                                                            Task.failure_kind.is_distinct_from(except_kind))))

    def savepoint_restores_done_since(self, limit: datetime) -> list[TaskRecord]:
        """Restore tasks (to a savepoint, in place) that succeeded at or after `limit`."""
        return tasks_of(self.session.scalars(select(Task).where(
            Task.service == TableService.RESTORE, Task.state == S.SUCCEEDED, Task.finished_at >= limit)))

    def timed_out(self) -> list[TaskRecord]:
        """Tasks whose last attempt ran past its timeout and that are not done."""
        return tasks_of(self.session.scalars(select(Task).where(Task.failure_kind == "timeout",
                                                            Task.state.in_([S.FAILED, S.RUNNABLE, S.RUNNING]))))

    def unclaimed_since(self, limit: datetime) -> list[TaskRecord]:
        """RUNNABLE tasks unchanged since `limit` and not deferred past it."""
        return tasks_of(self.session.scalars(select(Task).where(
            Task.state == S.RUNNABLE, Task.updated_at < limit, (Task.run_after.is_(None)) | (Task.run_after < limit))))

    def held_since(self, limit: datetime) -> list[TaskRecord]:
        """BLOCKED tasks created before `limit`."""
        return tasks_of(self.session.scalars(select(Task).where(Task.state == S.BLOCKED, Task.created_at < limit)))

    def tables_with_open(self, service: str) -> set[int]:
        """Tables with a task of `service` planned, pending, running or awaiting a retry."""
        return set(self.session.scalars(select(Task.table_id).where(
            Task.service == service, Task.state.not_in([S.SUCCEEDED, S.CANCELLED]))))

    def pending_per_table(self) -> dict[int, int]:
        """Table -> its tasks not yet finished."""
        return dict(self.session.execute(select(Task.table_id, func.count()).where(Task.state.in_(PENDING))
                                         .group_by(Task.table_id)).all())

    def running_or_runnable(self) -> list[TaskRecord]:
        return tasks_of(self.session.scalars(select(Task).where(Task.state.in_([S.RUNNING, S.RUNNABLE]))))

    def runnable_count(self) -> int:
        return self.session.scalar(select(func.count()).select_from(Task).where(Task.state == S.RUNNABLE)) or 0

    def running_per_queue(self) -> dict[str | None, int]:
        return dict(self.session.execute(select(Task.queue, func.count()).where(Task.state == S.RUNNING)
                                         .group_by(Task.queue)).all())

    def load_at_start(self, task_id: int) -> float:
        """The task's queue's load when it started: runs of that queue under way then, per slot."""
        return float(self.session.scalar(select(_load_at_start()).where(Task.id == task_id)) or 0.0)

    def succeeded_runs(self, table_id: int, service: str, limit: int
                       ) -> list[tuple[PlanStatistics, datetime, datetime, float]]:
        """The table's last `limit` succeeded runs of `service`: (plan stats, started, finished, queue load); a
        service whose task names its request has no plan statistics (empty ones)."""
        rows = self.session.execute(
            select(Task.plan_stats, Task.started_at, Task.finished_at, _load_at_start())
            .where(Task.table_id == table_id, Task.service == service, Task.state == S.SUCCEEDED,
                   Task.started_at.is_not(None), Task.finished_at.is_not(None))
            .order_by(Task.id.desc()).limit(limit)).all()
        return [(statistics_of(payload_of(service, stats)), started, finished, load or 0.0)
                for stats, started, finished, load in rows]

    # --- tables, queues, instances ------------------------------------------------------------------
    def enabled_tables(self, table_type: str | None = None) -> list[TableRecord]:
        stmt = select(RegisteredTable).where(RegisteredTable.enabled.is_(True))
        if table_type is not None:
            stmt = stmt.where(RegisteredTable.table_type == table_type)
        return tables_of(self.session.scalars(stmt))

    def enabled_table_digests(self) -> list[tuple[int, str, dict[str, Any] | None]]:
        """(id, name, planner state) of the enabled tables: not their policies, options or statistics."""
        return [tuple(r) for r in self.session.execute(
            select(RegisteredTable.id, RegisteredTable.name, RegisteredTable.planner_state)
            .where(RegisteredTable.enabled.is_(True)))]

    def enabled_queues(self) -> list[QueueRecord]:
        return records_of(QueueRecord,
                          self.session.scalars(select(ResourceQueue).where(ResourceQueue.enabled.is_(True))))

    def silent_instances(self, limit: datetime) -> list[InstanceRecord]:
        """Instances whose last heartbeat is older than `limit`."""
        return records_of(InstanceRecord, self.session.scalars(select(Instance).where(Instance.heartbeat_at < limit)))

    def instances(self) -> list[InstanceRecord]:
        """Every registered instance, alive or silent (the successors a silent one may have)."""
        return records_of(InstanceRecord, self.session.scalars(select(Instance).order_by(Instance.started_at)))


def _load_at_start() -> ScalarSelect[float]:
    """Per task row: its queue's load when it started, the runs of that queue under way then per slot (0
    without a queue)."""
    other = aliased(Task)
    concurrent = (select(func.count()).select_from(other)
                  .where(other.queue == Task.queue, other.started_at <= Task.started_at,
                         or_(other.finished_at.is_(None), other.finished_at > Task.started_at))
                  .scalar_subquery())
    return (select(func.coalesce(cast(concurrent, Float) / func.nullif(ResourceQueue.capacity, 0), 0.0))
            .where(ResourceQueue.name == Task.queue).scalar_subquery())
