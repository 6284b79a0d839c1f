"""Compensation for late commits on v6 tables (invariant 3 of the design).

A v6 delta commit writes its log blocks against the slice that was latest when it started. A compaction
planned at Tc while delta commits before Tc are still in flight would leave their blocks in a slice readers
no longer read. So the plan is written at once, its execution is held, and the plan records its blockers
(the delta commits before Tc still requested or inflight) in `extraMetadata`. As each blocker completes,
the log files it wrote into the *compacted slice* of a planned file group join that operation; a blocker
that is rolled back adds nothing. The plan is runnable when no blocker is left. Everything here is read
from the timeline, so `tms schedule` and the service see the same hold.

Only planned file groups take late log files. A file group outside the plan keeps its slice as the latest
one: readers and the next compaction see the late blocks there, so adding it would only widen a plan the
strategy already bounded. v8+ tables slice by completion time and need none of this."""
from __future__ import annotations

import posixpath

from tms.hudi.errors import InstantConflictError
from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State
from tms.hudi.timeline.serde import (
    CompactionOperation,
    CompactionPlan,
    parse_compaction_plan,
    serialize_compaction_plan,
)

from .compaction_strategy import TOTAL_IO_MB, TOTAL_IO_READ_MB, TOTAL_IO_WRITE_MB, TOTAL_LOG_FILES, TOTAL_LOG_FILES_SIZE
from .errors import CompensationError

BLOCKERS_KEY = "tms.compensation.blockers"

_MB = 1024 * 1024


def recorded_blockers(plan: CompactionPlan) -> list[str]:
    text = plan.extra_metadata.get(BLOCKERS_KEY, "")
    return [b for b in text.split(",") if b]


def with_blockers(extra_metadata: dict[str, str], blockers: list[str]) -> dict[str, str]:
    """`extraMetadata` recording `blockers` (the key is dropped when none is left)."""
    out = {k: v for k, v in extra_metadata.items() if k != BLOCKERS_KEY}
    if blockers:
        out[BLOCKERS_KEY] = ",".join(sorted(blockers))
    return out


def pending_delta_commits_before(table: HudiTable, tc: str) -> list[str]:
    """Delta commits before `tc` still requested or inflight. One whose rollback is planned still holds
    the plan: the hold ends when the rollback has run and removed it from the timeline, which is also
    what the executor checks before it runs the plan."""
    return [i.timestamp for i in table.timeline.pending((Action.DELTA_COMMIT,)) if i.timestamp < tc]


def held_compactions(table: HudiTable) -> dict[str, list[str]]:
    """Requested compaction plans that record blockers -> those blockers (as last synced)."""
    tl = table.timeline
    out = {}
    for inst in tl.pending((Action.COMPACTION,)):
        if inst.is_requested:
            blockers = recorded_blockers(parse_compaction_plan(tl.read_plan(inst.timestamp)))
            if blockers:
                out[inst.timestamp] = blockers
    return out


def _log_order(name: str) -> tuple[str, int, str, str]:
    """Hudi's order of a plan's log file names."""
    parsed = LogFileName.parse(name)
    if parsed is None:
        raise CompensationError(f"{name} in a compaction plan is not a log file name")
    return parsed.sort_key


def _late_log_files(table: HudiTable, blocker: Instant, operations: dict[tuple[str, str], CompactionOperation],
                    ) -> list[tuple[CompactionOperation, str]]:
    """(operation, log file name) for each log file the completed `blocker` wrote into the compacted
    slice of a planned file group."""
    out = []
    for stat in table.timeline.commit_metadata(blocker).write_stats():
        partition = stat.partition_path or posixpath.dirname(stat.path or "")
        names = {posixpath.basename(stat.path)} if stat.path else set()
        names.update(stat.log_files or [])
        for name in names:
            log = LogFileName.parse(name)
            if log is None:
                base = BaseFileName.parse(name)
                if base is not None and (partition, base.file_id) in operations:
                    raise CompensationError(
                        f"late delta commit {blocker.timestamp} rewrote the base file of planned file group "
                        f"{base.file_id} in {partition or '(root)'}; the plan cannot carry it")
                continue
            op = operations.get((partition, log.file_id))
            if op is not None and log.instant == op.base_instant_time:
                out.append((op, name))
    return out


def _refresh_metrics(table: HudiTable, op: CompactionOperation) -> None:
    """Log-dependent metrics after log files joined (the write estimate depends on the base file only)."""
    partition = op.partition_path or ""
    sizes = {i.name: i.size for i in table.storage.listdir(partition) if not i.is_dir}
    log_bytes = sum(sizes.get(n, 0) for n in op.delta_file_paths)
    base_bytes = sizes.get(op.data_file_path, 0) if op.data_file_path else 0
    read_mb = (base_bytes + log_bytes) // _MB
    write_mb = op.metrics.get(TOTAL_IO_WRITE_MB, 0.0)
    op.metrics.update({TOTAL_LOG_FILES_SIZE: float(log_bytes), TOTAL_LOG_FILES: float(len(op.delta_file_paths)),
                       TOTAL_IO_READ_MB: float(read_mb), TOTAL_IO_MB: float(read_mb + write_mb)})


def sync_held_plan(table: HudiTable, tc: str) -> list[str]:
    """Bring the compaction plan at `tc` up to date with its blockers; returns the blockers still pending
    (none: the plan is runnable). Rewrites the plan only while it is requested; a held plan found inflight
    or completed raises CompensationError and is left alone."""
    tl = table.timeline
    tl.reload()
    if table.config.traits.log_files_named_by_writer:
        return []
    states = tl.states_of(tc)
    if not states:
        raise CompensationError(f"compaction plan {tc} is gone from the timeline of {table.name}")
    plan = parse_compaction_plan(tl.read_plan(tc))
    recorded = recorded_blockers(plan)
    if set(states) != {State.REQUESTED}:
        if recorded:
            raise CompensationError(
                f"compaction {tc} of {table.name} is {states[max(states)].state.name.lower()} while held by late delta "
                f"commits {', '.join(recorded)}; their log files may be lost")
        return []
    operations = {(op.partition_path or "", op.file_id or ""): op for op in plan.operations}
    remaining, changed = [], {}
    # Recorded blockers, plus writers whose requested instant (before Tc) appeared after the plan was made.
    for ts in sorted(set(recorded) | set(pending_delta_commits_before(table, tc))):
        inst = tl.get(ts)
        if inst is None:
            continue  # rolled back (its rollback removed it): nothing to add
        if not inst.is_completed:
            remaining.append(ts)
            continue
        for op, name in _late_log_files(table, inst, operations):
            if name not in op.delta_file_paths:  # two late commits may append to one new log file
                op.delta_file_paths.append(name)
                changed[(op.partition_path, op.file_id)] = op
    if not changed and remaining == recorded:
        return remaining
    for op in changed.values():
        op.delta_file_paths.sort(key=_log_order)
        _refresh_metrics(table, op)
    plan.extra_metadata = with_blockers(plan.extra_metadata, remaining)
    try:
        tl.rewrite_requested(states[State.REQUESTED], serialize_compaction_plan(plan))
    except InstantConflictError as e:
        raise CompensationError(f"compaction {tc} of {table.name} changed state during its sync: {e}") from e
    return remaining


def sync_held_plans(table: HudiTable) -> dict[str, list[str]]:
    """Sync every held compaction plan of the table: plan instant -> blockers still pending."""
    table.timeline.reload()
    return {tc: sync_held_plan(table, tc) for tc in held_compactions(table)}
