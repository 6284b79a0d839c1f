"""Adoption: requested plans on the timeline that the caller has no task for (scheduled by a writer that
only schedules, or left by a crash between writing the plan and recording its task). The caller passes the
instants it knows; nothing here writes, so a plan is never made twice."""
from __future__ import annotations

from collections.abc import Collection

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import parse_compaction_plan
from tms.table_service import TableService

from .compensation import recorded_blockers
from .planned import Planned
from .stats import plan_stats
from .triggers import is_clustering

_SERVICE_OF: dict[str, TableService] = {
    Action.COMPACTION: TableService.COMPACTION, Action.CLUSTERING: TableService.CLUSTERING,
    Action.REPLACE_COMMIT: TableService.CLUSTERING, Action.CLEAN: TableService.CLEAN,
    Action.ROLLBACK: TableService.ROLLBACK}


def find_unknown_plans(table: HudiTable, known_instants: Collection[str]) -> list[Planned]:
    """Requested compaction, clustering, clean and rollback plans whose instant is not in
    `known_instants`, oldest first, with their statistics (and a compaction's recorded blockers).
    A v6 `replacecommit` is adopted only when it holds a clustering plan."""
    tl = table.timeline
    tl.reload()
    known = set(known_instants)
    out = []
    for inst in tl.pending(_SERVICE_OF):
        if not inst.is_requested or inst.timestamp in known:
            continue
        if inst.action == Action.REPLACE_COMMIT and not is_clustering(table, inst):
            continue
        blockers: tuple[str, ...] = ()
        if inst.action == Action.COMPACTION:
            blockers = tuple(recorded_blockers(parse_compaction_plan(tl.read_plan(inst.timestamp))))
        out.append(Planned(inst.timestamp, _SERVICE_OF[inst.action], plan_stats(table, inst.timestamp), blockers))
    return out
