"""Savepoints as a policy (`tms.savepoint.interval.hours`, `tms.savepoint.keep`): when TMS savepoints a table's
latest completed write, and which of its own savepoints it deletes. The decision is a pure function of the
savepoints on the timeline, the latest write and the time; `apply_savepoint_policy` carries it out (the
planning pass runs it under the table's lock). A savepoint is two small timeline files, so it is written by
the pass itself, as a plan is, not run as a task."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import create_savepoint, delete_savepoint, latest_savepointable, read_savepoint

from .policy import TablePolicy

TMS_SAVEPOINTER = "tms"  # `savepointedBy` of the savepoints the policy makes (and may delete)


@dataclass(frozen=True)
class SavepointInfo:
    instant: str
    by: str
    made_at: datetime


@dataclass(frozen=True)
class SavepointDecision:
    create: str | None = None          # the instant to savepoint now
    delete: tuple[str, ...] = ()       # TMS's own savepoints to delete, oldest first


def decide_savepoints(policy: TablePolicy, savepoints: Sequence[SavepointInfo], latest_write: str | None,
                      now: datetime) -> SavepointDecision:
    if policy.savepoint_interval_hours <= 0:
        return SavepointDecision()
    own = sorted((s for s in savepoints if s.by == TMS_SAVEPOINTER), key=lambda s: s.instant)
    last = max((s.made_at for s in own), default=None)
    due = last is None or now - last >= timedelta(hours=policy.savepoint_interval_hours)
    create = latest_write if due and latest_write and latest_write not in {s.instant for s in savepoints} else None
    kept = [s.instant for s in own] + ([create] if create else [])
    return SavepointDecision(create, tuple(kept[:max(0, len(kept) - policy.savepoint_keep)]))


def apply_savepoint_policy(table: HudiTable, policy: TablePolicy, now: datetime) -> SavepointDecision:
    """Savepoint the latest write if the policy says it is due, then delete TMS's oldest beyond `keep`."""
    if policy.savepoint_interval_hours <= 0:
        return SavepointDecision()
    infos = []
    for inst in table.timeline.savepoints():
        meta = read_savepoint(table, inst.timestamp)
        infos.append(SavepointInfo(inst.timestamp, meta.savepointed_by,
                                   datetime.fromtimestamp(meta.savepointed_at / 1000, UTC)))
    decision = decide_savepoints(policy, infos, latest_savepointable(table), now)
    if decision.create:
        create_savepoint(table, decision.create, user=TMS_SAVEPOINTER, comment="tms.savepoint.interval.hours",
                         now_ms=int(now.timestamp() * 1000))
    for instant in decision.delete:
        delete_savepoint(table, instant)
    return decision
