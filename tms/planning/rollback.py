"""Rollback plans: `<Tr>.rollback.requested` (HoodieRollbackPlan) for a failed write, or for a failed
attempt of a compaction or clustering before it is retried.

What to undo comes from the instant's markers, as Hudi's MarkerBasedRollbackStrategy reads them: a base
file written (CREATE, MERGE) is deleted; a log file appended to (APPEND) is deleted on v8+ (one log file per
delta commit) and, on v6, gets a rollback command block (`logBlocksToBeDeleted`), unless the failed write
started that file group's slice itself. Without markers, the files are found as Hudi's listing-based
strategy finds them: base files (and v8 log files) named with the instant, and the log files the inflight
write stats name. Compaction and clustering only ever write new base files named with their instant."""
from __future__ import annotations

import posixpath
from datetime import datetime

from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.fs_view.view import partition_paths
from tms.hudi.storage.paths import join
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant
from tms.hudi.timeline.serde import InstantInfo, RollbackPlan, RollbackRequest, serialize_rollback_plan
from tms.table_service import TableService

from .errors import PlanningError
from .failed_writes import find_failed_writes
from .footprint import IOType, WrittenFile, marker_files, written_files
from .planned import Planned
from .policy import TablePolicy
from .rollback_targets import rollback_targets
from .stats import plan_stats

_WRITES = (Action.COMMIT, Action.DELTA_COMMIT)
_SERVICES = (Action.COMPACTION, Action.CLUSTERING, Action.REPLACE_COMMIT)


def _listed_files(table: HudiTable, inst: Instant) -> list[WrittenFile]:
    """Files named with the instant, in every partition (the listing-based fallback)."""
    v8_logs = table.config.traits.log_files_named_by_writer and inst.action in _WRITES
    out = []
    for partition in partition_paths(table):
        for info in table.storage.listdir(partition):
            base = BaseFileName.parse(info.name)
            log = LogFileName.parse(info.name) if v8_logs else None
            if (base and base.instant == inst.timestamp) or (log and log.instant == inst.timestamp):
                out.append(WrittenFile(info.path, IOType.CREATE if base else IOType.APPEND))
    return out


def _files_to_undo(table: HudiTable, inst: Instant) -> list[WrittenFile]:
    markers = marker_files(table.storage, inst.timestamp)
    if markers is not None:
        return markers
    found = {f.path: f for f in _listed_files(table, inst)}
    if inst.action in _WRITES:  # v6 appends leave no file named with the instant: the stats name them
        found.update({f.path: f for f in written_files(table, inst) if f.path not in found})
    return list(found.values())


def _request(table: HudiTable, inst: Instant, f: WrittenFile) -> RollbackRequest | None:
    if f.file_id is None or not table.storage.exists(f.path):
        return None  # not a data file, or never written: nothing to undo
    log = f.log_name
    if log is None or table.config.traits.log_files_named_by_writer or log.instant == inst.timestamp:
        # Hudi leaves fileId and base instant empty in a request that only deletes a file.
        return RollbackRequest(partition_path=f.partition, file_id="", latest_base_instant="",
                               files_to_be_deleted=[join(table.base_path, f.path)])
    return RollbackRequest(partition_path=f.partition, file_id=log.file_id, latest_base_instant=log.instant,
                           log_blocks_to_be_deleted={join(table.base_path, f.path): table.storage.info(f.path).size})


def _completed_files(table: HudiTable, inst: Instant) -> list[WrittenFile]:
    """What a completed write, compaction or clustering wrote: the files its commit metadata names, and
    the files named with its instant (Hudi's listing-based rollback of a completed instant, in a restore)."""
    found = {f.path: f for f in _listed_files(table, inst)}
    for stat in table.timeline.commit_metadata(inst).write_stats():
        partition = stat.partition_path or ""
        paths = [stat.path] if stat.path else []
        paths += [posixpath.join(partition, n) for n in stat.log_files or []]
        for path in paths:
            if path not in found:
                found[path] = WrittenFile(path, IOType.APPEND if LogFileName.parse(path) else IOType.CREATE)
    return list(found.values())


def restore_rollback_plan(table: HudiTable, inst: Instant) -> RollbackPlan:
    """The rollback plan of one instant a restore undoes, completed or pending: every file it wrote is
    deleted (its v6 log appends marked with a rollback command block)."""
    files = _completed_files(table, inst) if inst.is_completed else _files_to_undo(table, inst)
    requests = [r for r in (_request(table, inst, f) for f in sorted(files, key=lambda f: f.path)) if r is not None]
    return RollbackPlan(instant_to_rollback=InstantInfo(commit_time=inst.timestamp, action=inst.action),
                        rollback_requests=requests)


def plan_rollback(table: HudiTable, timestamp: str) -> Planned | None:
    """Plan the rollback of the pending instant at `timestamp`: a failed commit or delta commit, or the
    failed attempt of an inflight compaction or clustering. None if a rollback already names it."""
    tl = table.timeline
    tl.reload()
    inst = tl.get(timestamp)
    if inst is None:
        raise PlanningError(f"no instant {timestamp} on the timeline of {table.name}")
    if inst.is_completed:
        raise PlanningError(f"instant {timestamp} is completed: only failed (pending) instants are rolled back")
    if inst.action not in _WRITES + _SERVICES:
        raise PlanningError(f"instant {timestamp} is a {inst.action}: TMS rolls back writes, compactions and "
                           "clusterings")
    if inst.action in _SERVICES and inst.is_requested:
        raise PlanningError(f"{inst.action} {timestamp} is requested: no attempt ran, nothing to roll back")
    if timestamp in rollback_targets(table, after=timestamp):
        return None
    files = sorted(_files_to_undo(table, inst), key=lambda f: f.path)
    requests = [r for r in (_request(table, inst, f) for f in files) if r is not None]
    plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=timestamp, action=inst.action),
                        rollback_requests=requests)
    rollback = tl.create_requested(Action.ROLLBACK, serialize_rollback_plan(plan))
    return Planned(rollback.timestamp, TableService.ROLLBACK, plan_stats(table, rollback.timestamp))


def plan_failed_write_rollbacks(table: HudiTable, policy: TablePolicy, now: datetime, *, lazy: bool = False
                                ) -> list[Planned]:
    """A rollback plan for every write presumed failed (see failed_writes; `lazy`: a multi-writer table)."""
    planned = (plan_rollback(table, failed.instant.timestamp)
               for failed in find_failed_writes(table, policy, now, lazy=lazy))
    return [p for p in planned if p is not None]
