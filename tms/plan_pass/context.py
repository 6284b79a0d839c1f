"""What a planning pass over one table works with (tms.plan_pass.passes), and what each service's planner is
handed (tms.plan_pass.planners)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable

if TYPE_CHECKING:  # the jobs import the registry, and through it this: they never open the database
    from sqlalchemy.orm import Session

    from tms.db import TableRecord
    from tms.planning.policy import TablePolicy


@dataclass
class PassContext:
    session: Session
    row: TableRecord
    table: HudiTable  # from the planner's cache
    policy: TablePolicy
    now: datetime
    services: frozenset[str]  # what the planner schedules
    # The table's lock, as the writers take it: plans and rollbacks are written, and their instant times
    # generated, while it is held (none: a single writer).
    transactions: TransactionManager | None = None
    # How often a compaction or clustering plan looks at the whole table (None: always; TMS_PLANNER_FULL_PASS_HOURS).
    full_pass_every: timedelta | None = None

    @property
    def lazy_failed_writes(self) -> bool:
        """The table's writers clean failed writes lazily (Hudi requires it of multiple writers)."""
        return self.transactions is not None and self.transactions.config.multi_writer

    def transaction(self, *, exact_view: bool = False):
        return (self.transactions or TransactionManager.single_writer(self.table)).transaction(
            exact_view=exact_view)
