"""What a planning call wrote on the timeline."""
from __future__ import annotations

from dataclasses import dataclass, field

from tms.table_service import TableService

from .stats import PlanStats


@dataclass(frozen=True)
class Planned:
    """A requested plan on the timeline. `service` is the table service (clustering also on v6, where the
    instant is a `replacecommit`). `blockers`: the delta commits a v6 compaction is held for. `scope`: how a
    compaction or clustering plan chose its partitions (a full pass or incremental, and why), in words: what the
    planner said when it wrote the plan, not part of the plan (a plan read back from the timeline has none)."""

    instant: str
    service: TableService
    stats: PlanStats
    blockers: tuple[str, ...] = ()
    scope: str = field(default="", compare=False)

    @property
    def runnable(self) -> bool:
        return not self.blockers
