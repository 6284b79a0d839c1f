"""Instants that a rollback on the timeline names: being rolled back, or rolled back already."""
from __future__ import annotations

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import parse_rollback_metadata, parse_rollback_plan


def rollback_targets(table: HudiTable, after: str | None = None) -> set[str]:
    """Instant times named by a rollback in any state: from its plan while pending, from its metadata
    (completed files are cached by the timeline) once completed. A rollback is later than its target,
    so for the targets after `after` only the rollbacks after it are read."""
    tl = table.timeline
    out: set[str] = set()
    for inst in tl.iter_instants((Action.ROLLBACK,), after=after):
        if inst.is_completed:
            out.update(parse_rollback_metadata(tl.read(inst)).commits_rollback)
        else:
            target = parse_rollback_plan(tl.read_plan(inst.timestamp)).instant_to_rollback
            if target is not None:
                out.add(target.commit_time)
    return out
