"""Compaction plans for MERGE_ON_READ tables: `<Tc>.compaction.requested` (HoodieCompactionPlan v2).

Each latest file slice with log files is an operation, unless its file group is already in a pending
compaction or clustering; the strategy orders and bounds them. Which log files a slice contributes:
- v8+: those whose delta commit completed before Tc (slicing is by completion time; no hold);
- v6: those present at plan time, except log files holding nothing but blocks of writes still in flight
  (they join the plan when their write completes, see compensation). The delta commits before Tc still
  in flight are the plan's blockers."""
from __future__ import annotations

import sys
from datetime import datetime, timedelta

from tms.hudi.errors import InstantConflictError
from tms.hudi.fs_view.view import FileSlice, LogFile, chunked_views
from tms.hudi.log_format.log_file import BlockType, read_log_file
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import CompactionOperation, CompactionPlan, serialize_compaction_plan
from tms.table_service import TableService

from .compaction_strategy import Selection, capture_metrics
from .compensation import pending_delta_commits_before, sync_held_plan, with_blockers
from .errors import PlanningError
from .footprint import IOType, written_files
from .incremental import Scope, left_out, plan_scope, remember_plan
from .planned import Planned
from .policy import TablePolicy
from .stats import compaction_plan_stats
from .triggers import compaction_trigger
from .ttl import ttl_plan_metadata

_NOT_RECORDS = (BlockType.COMMAND, BlockType.CORRUPT)


def _holds_completed_block(table: HudiTable, path: str) -> bool:
    committed = table.timeline.committed_rule()
    with table.storage.open(path) as fh:
        return any(b.block_type not in _NOT_RECORDS and b.instant_time and committed(b.instant_time)
                   for b in read_log_file(fh))


def _pending_only_logs(table: HudiTable) -> set[str]:
    """v6: log files (relative paths) that pending writes created and that hold none of a completed
    write's blocks yet. Only files pending writes touch are read, and only their block headers."""
    touched = {f.path for inst in table.timeline.inflight_writes() for f in written_files(table, inst)
               if f.io_type is IOType.APPEND}
    return {p for p in touched if table.storage.exists(p) and not _holds_completed_block(table, p)}


class _Candidate:
    """A latest file slice with log files to compact, held as small as it can be (a full pass over a giant table
    holds one per file group): its operation is made only if the strategy chooses it."""
    __slots__ = ("partition_path", "file_id", "base_instant", "base_name", "delta_file_paths", "base_size",
                 "log_bytes", "parquet_max_file_size")

    def __init__(self, fs: FileSlice, logs: list[LogFile], parquet_max_file_size: int):
        self.partition_path = fs.partition
        self.file_id = fs.file_id
        self.base_instant = sys.intern(fs.base_instant)  # one string per instant, not per file group
        self.base_name = fs.base_file.file_name if fs.base_file else None
        self.delta_file_paths = tuple(f.file_name for f in logs)
        self.base_size = fs.base_file.size if fs.base_file else None
        self.log_bytes = sum(f.size for f in logs if f.size >= 0)
        self.parquet_max_file_size = parquet_max_file_size

    @property
    def metrics(self) -> dict[str, float]:
        return capture_metrics(self.base_size, [self.log_bytes],
                               self.parquet_max_file_size, log_files=len(self.delta_file_paths))

    @property
    def bytes(self) -> int:
        """What its operation reads, as listed."""
        return (self.base_size or 0) + self.log_bytes

    def operation(self) -> CompactionOperation:
        return CompactionOperation(
            base_instant_time=self.base_instant, file_id=self.file_id, partition_path=self.partition_path,
            data_file_path=self.base_name, delta_file_paths=list(self.delta_file_paths), metrics=self.metrics)


_ATTEMPTS = 3  # instant times tried when writers without the table's lock take them meanwhile


def plan_compaction(table: HudiTable, policy: TablePolicy, now: datetime, *, force: bool = False,
                    full_pass_every: timedelta | None = None) -> Planned | None:
    """Plan a compaction if the trigger strategy says one is due (or `force`: an operator asked for one now)
    and some file slice has log files to compact; None otherwise. On v6 the plan may come back held
    (`blockers`). Whether any engine can run it is the caller's decision (tms.planning.capabilities: a Hudi
    engine runs what TMS's own cannot merge), taken before this is called. With `full_pass_every`, the plan
    looks only at the partitions written since the last compaction, and at the whole table once per that
    period (tms.planning.incremental)."""
    config = table.config
    if not config.is_mor:
        raise PlanningError(f"compaction applies to MERGE_ON_READ tables; {config.name} is {config.table_type.value}")
    tl = table.timeline
    tl.reload()
    if not force and not compaction_trigger(table, policy, now).due:
        return None
    scope = plan_scope(table, TableService.COMPACTION, now, full_pass_every, policy)
    if scope.partitions is not None and not scope.partitions:
        return None  # nothing written since the last compaction, nothing left out by it: nothing to compact
    for _ in range(_ATTEMPTS - 1):
        try:
            return _plan_at(table, policy, now, tl.new_instant_time(), scope)
        except InstantConflictError:
            # A writer without the table's lock took the same instant time meanwhile (the same millisecond):
            # plan again at a later time rather than wait for the next event.
            tl.reload(force=True)
    return _plan_at(table, policy, now, tl.new_instant_time(), scope)


def _plan_at(table: HudiTable, policy: TablePolicy, now: datetime, tc: str, scope: Scope) -> Planned | None:
    """The compaction plan at instant time `tc` over the partitions of `scope`, written; None if no file slice
    has logs to compact. The partitions are read a few at a time (chunked_views): a full pass over a giant table
    holds its candidate operations, not its files."""
    config, tl = table.config, table.timeline
    v6 = not config.traits.log_files_named_by_writer  # v6 slices by instant time
    deferred = _pending_only_logs(table) if v6 else set()

    def compactable(log: LogFile) -> bool:
        return log.path not in deferred if v6 else (log.completion_time or log.name.instant) < tc

    selection: Selection[_Candidate] = Selection(policy)  # holds what the plan may take, not every candidate
    busy: set[tuple[str, str]] | None = None
    for view in chunked_views(table, scope.partitions):
        if busy is None:  # the same for every chunk
            busy = set(view.pending_compaction) | set(view.pending_clustering)
        for fs in view.latest_slices():
            if (fs.partition, fs.file_id) in busy:
                continue
            logs = [f for f in fs.log_files if compactable(f)]
            if logs:
                selection.offer(_Candidate(fs, logs, policy.parquet_max_file_size))
    chosen = selection.chosen()
    if not chosen:
        return None
    blockers = pending_delta_commits_before(table, tc) if v6 else []
    extra = with_blockers(ttl_plan_metadata(policy, now), blockers)
    missing = None
    if config.traits.completion_times:  # what the next plan needs to schedule incrementally
        missing = left_out(selection.let_go(), busy or ())
        extra |= scope.metadata()
    operation_bytes = [c.bytes for c in chosen]
    del selection
    plan = CompactionPlan(operations=[c.operation() for c in chosen], extra_metadata=extra,
                          missing_schedule_partitions=missing)
    del chosen
    tl.create_requested(Action.COMPACTION, serialize_compaction_plan(plan), timestamp=tc)
    remember_plan(tl, tc, extra, missing)
    # A writer may have requested an instant before Tc while this plan was being made: hold for it too.
    remaining = sync_held_plan(table, tc) if v6 else []
    stats = compaction_plan_stats(table, plan, operation_bytes)
    return Planned(tc, TableService.COMPACTION, stats, tuple(remaining), scope.describe())
