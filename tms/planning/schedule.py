"""One planning pass over one table, for one table service: first the held v6 compaction plans whose
blockers may have resolved are synced, then the service is planned. What `tms schedule` runs, and what the
service's event, periodic and reconciliation paths will run under the table's row lock."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.capabilities import require_capability
from tms.table_service import PLANNED_SERVICES, TableService

from .archive import plan_archive
from .clean import plan_clean
from .clustering import plan_clustering
from .compaction import plan_compaction
from .compensation import sync_held_plans
from .errors import PlanningError
from .planned import Planned
from .policy import TablePolicy
from .rollback import plan_failed_write_rollbacks


@dataclass
class ScheduleResult:
    synced: dict[str, list[str]] = field(default_factory=dict)  # held compaction -> blockers left
    planned: list[Planned] = field(default_factory=list)


def schedule(table: HudiTable, service: str, policy: TablePolicy, now: datetime,
             transactions: TransactionManager | None = None,
             full_pass_every: timedelta | None = None) -> ScheduleResult:
    """Plan under `transactions` (the table's lock, as Hudi schedules table services): plan instant times are
    generated, and plans written, while the lock is held. `full_pass_every`: compaction and clustering are
    scheduled incrementally between full passes (tms.planning.incremental)."""
    if service not in PLANNED_SERVICES:
        raise PlanningError(f"unknown table service {service!r} (one of {', '.join(PLANNED_SERVICES)})")
    require_capability(table, service)  # nothing planned that cannot run: refused before anything is written
    transactions = transactions or TransactionManager.single_writer(table)
    with transactions.transaction():
        return _schedule(table, service, policy, now, lazy=transactions.config.multi_writer,
                         full_pass_every=full_pass_every)


def _schedule(table: HudiTable, service: str, policy: TablePolicy, now: datetime, *, lazy: bool = False,
              full_pass_every: timedelta | None = None) -> ScheduleResult:
    result = ScheduleResult(synced=sync_held_plans(table))
    if service == TableService.ROLLBACK:
        result.planned = plan_failed_write_rollbacks(table, policy, now, lazy=lazy)
        return result
    if service == TableService.COMPACTION:
        planned = plan_compaction(table, policy, now, full_pass_every=full_pass_every)
    elif service == TableService.CLUSTERING:
        planned = plan_clustering(table, policy, now, full_pass_every=full_pass_every)
    elif service == TableService.ARCHIVE:
        planned = plan_archive(table, policy, now)
    else:
        planned = plan_clean(table, policy, now)
    result.planned = [planned] if planned else []
    return result
