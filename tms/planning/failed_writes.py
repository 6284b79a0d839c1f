"""Writes that failed: commits and delta commits still requested or inflight whose writer is gone.

With a heartbeat file (`.hoodie/.heartbeat/<instant>`, Hudi's LAZY failed-writes policy), the writer is
gone once the file has not been touched for more than interval x tolerable misses, exactly as
HoodieHeartbeatClient.isHeartbeatExpired decides. Under the LAZY policy (every multi-writer table: Hudi requires
it with optimistic concurrency control) a pending write without a heartbeat file is failed too: a writer deletes
its heartbeat when its write client closes, after a commit or a failure (a write refused for a conflict), and
Hudi counts a missing heartbeat as expired; TMS waits the same tolerance after the instant's last file change,
for a write whose heartbeat has not begun yet. Writers with the EAGER policy keep no heartbeat; their instant is
presumed failed once its timeline files are older than `tms.rollback.no.heartbeat.age.seconds` (file times, not
the instant time, which Hudi 0.x writes in the writer's local time zone)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Instant

from .policy import TablePolicy
from .rollback_targets import rollback_targets

HEARTBEAT_DIR = ".hoodie/.heartbeat"


@dataclass(frozen=True)
class FailedWrite:
    instant: Instant
    reason: str


def _mtime(storage: Storage, rel: str) -> float | None:
    try:
        return storage.info(rel).mtime
    except FileNotFoundError:
        return None


def heartbeat_tolerance_seconds(policy: TablePolicy) -> float:
    """How long a writer's heartbeat may be silent before the writer is presumed gone."""
    return policy.heartbeat_interval_ms * policy.heartbeat_tolerable_misses / 1000


def find_failed_writes(table: HudiTable, policy: TablePolicy, now: datetime, *, lazy: bool = False
                       ) -> list[FailedWrite]:
    """Pending writes presumed failed, oldest first; writes a rollback already names are left out. `lazy`: the
    table's writers clean failed writes lazily (multi-writer)."""
    tl = table.timeline
    tl.reload()
    writes = tl.inflight_writes()
    if not writes:
        return []
    condemned = rollback_targets(table, after=writes[0].timestamp)
    now_s = now.timestamp()
    tolerance_s = heartbeat_tolerance_seconds(policy)
    out = []
    for inst in writes:
        if inst.timestamp in condemned:
            continue
        beat = _mtime(table.storage, f"{HEARTBEAT_DIR}/{inst.timestamp}")
        if beat is not None:
            if now_s - beat > tolerance_s:
                out.append(FailedWrite(inst, f"last heartbeat {now_s - beat:.0f} s ago "
                                             f"(tolerance {tolerance_s:.0f} s)"))
            continue
        touched = [_mtime(table.storage, tl.path_of(i)) for i in tl.states_of(inst.timestamp).values()]
        last = max((t for t in touched if t is not None), default=None)
        if last is not None and lazy and now_s - last > tolerance_s:
            out.append(FailedWrite(inst, f"its heartbeat ended and it is untouched for {now_s - last:.0f} s "
                                         f"(tolerance {tolerance_s:.0f} s)"))
        elif last is not None and now_s - last > policy.rollback_no_heartbeat_age_seconds:
            out.append(FailedWrite(inst, f"no heartbeat and untouched for {now_s - last:.0f} s"))
    return out
