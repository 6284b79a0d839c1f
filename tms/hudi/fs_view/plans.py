"""The file groups that pending compaction and clustering plans hold."""
from __future__ import annotations

from ..timeline.instant import Action
from ..timeline.serde import parse_compaction_plan, parse_requested_replace_metadata
from .parts import TableParts


def pending_compaction_groups(table: TableParts) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> instant of the pending compaction that plans it."""
    tl = table.timeline
    out: dict[tuple[str, str], str] = {}
    for inst in tl.pending((Action.COMPACTION,)):
        plan = parse_compaction_plan(tl.read_plan(inst.timestamp))
        for op in plan.operations:
            out[(op.partition_path or "", op.file_id or "")] = inst.timestamp  # "": a non-partitioned table
    return out


def pending_clustering_groups(table: TableParts) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> instant of the pending clustering that rewrites it. On v6 a pending
    `replacecommit` is clustering only if its requested file holds a clustering plan."""
    tl = table.timeline
    out: dict[tuple[str, str], str] = {}
    for inst in tl.pending((Action.CLUSTERING, Action.REPLACE_COMMIT)):
        try:
            data = tl.read_plan(inst.timestamp)
        except Exception:  # a v6 insert-overwrite may have no requested plan file
            continue
        if not data:
            continue
        plan = parse_requested_replace_metadata(data).clustering_plan
        if plan is None:
            continue
        for group in plan.input_groups:
            for s in group.slices:
                out[(s.partition_path or "", s.file_id or "")] = inst.timestamp
    return out
