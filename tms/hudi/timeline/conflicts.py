"""Conflict checks at commit, as Hudi's SimpleConcurrentFileWritesConflictResolutionStrategy makes them: an
operation about to complete conflicts with every write that completed after it started (or that was pending
when it started and has completed since) and touched one of its file groups. Run under the table's lock,
on a freshly reloaded timeline, just before the completed file is written.

Who wins follows Hudi's MVCC promise: a writer is never failed because of a table service, so a clustering
(or any action that rewrites file groups) that finds a conflicting write is the one that gives way; between
writers, the one completing second fails (OCC), unless the table uses non-blocking concurrency control, where
writers' log files never conflict and are merged by completion time. A compaction never conflicts: writes
after its plan go to the next file slice."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..errors import HudiError
from ..fs_view.file_names import BaseFileName, LogFileName
from .instant import Action, Instant, State
from .serde import CommitMetadata, parse_commit_metadata, parse_requested_replace_metadata, parse_rollback_plan
from .timeline import Timeline

FileGroupId = tuple[str, str]   # (partition path, file id)
CONFLICT_REASON = "conflict"
_WRITES = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


@dataclass(frozen=True)
class Conflict:
    instant: Instant                 # the other operation
    file_groups: frozenset[FileGroupId]

    def describe(self) -> str:
        done = f" (completed {self.instant.completion_time})" if self.instant.completion_time else ""
        groups = ", ".join(f"{p}/{f}" if p else f for p, f in sorted(self.file_groups)[:5])
        more = f" and {len(self.file_groups) - 5} more" if len(self.file_groups) > 5 else ""
        return f"{self.instant.action} {self.instant.timestamp}{done} on {groups}{more}"


class WriteConflictError(HudiError):
    """An operation that must not complete: a concurrent write touched its file groups. `reason` is the task's
    end reason (`conflict`)."""

    reason = CONFLICT_REASON

    def __init__(self, action: str, timestamp: str, conflicts: list[Conflict], outcome: str):
        self.action = action
        self.timestamp = timestamp
        self.conflicts = conflicts
        super().__init__(f"conflict: {action} {timestamp} overlaps "
                         f"{'; '.join(c.describe() for c in conflicts)}; {outcome}")


def touched_file_groups(meta: CommitMetadata) -> set[FileGroupId]:
    """The file groups a commit wrote to or replaced."""
    touched = {(s.partition_path or "", s.file_id) for s in meta.write_stats() if s.file_id}
    for partition, file_ids in (meta.partition_to_replace_file_ids or {}).items():
        touched.update((partition or "", f) for f in file_ids)
    return touched


def is_table_service_commit(meta: CommitMetadata) -> bool:
    """A compaction's (or log compaction's) commit: it never conflicts with writers (MVCC)."""
    return bool(meta.compacted) or (meta.operation_type or "").upper() in ("COMPACT", "LOG_COMPACT")


def clustering_file_groups(timeline: Timeline, timestamp: str) -> set[FileGroupId]:
    """The input file groups of the pending clustering plan at `timestamp` (none if it is not clustering)."""
    plan = parse_requested_replace_metadata(timeline.read_plan(timestamp)).clustering_plan
    if plan is None:
        return set()
    return {(s.partition_path or "", s.file_id) for g in plan.input_groups for s in g.slices if s.file_id}


def find_conflicts(timeline: Timeline, started: str, file_groups: Iterable[FileGroupId], *,
                   pending_at_start: Iterable[str] = (),
                   counts: Callable[[Instant, CommitMetadata], bool] = lambda i, m: True) -> list[Conflict]:
    """Completed writes (commit, deltacommit, replacecommit) that started or completed after `started`, or were
    pending at that time (`pending_at_start`) and have completed since, whose file groups overlap `file_groups`;
    `counts` says which of them matter to the caller. Compaction commits never count."""
    mine = set(file_groups)
    if not mine:
        return []
    candidates = {i.timestamp: i for i in completed_after(timeline, started)}
    for ts in pending_at_start:
        inst = timeline.get(ts)
        if inst is not None and inst.is_completed and inst.action in _WRITES:
            candidates[ts] = inst
    conflicts = []
    for ts in sorted(candidates):
        inst = candidates[ts]
        meta = timeline.commit_metadata(inst)
        if is_table_service_commit(meta) or not counts(inst, meta):
            continue
        overlap = touched_file_groups(meta) & mine
        if overlap:
            conflicts.append(Conflict(inst, frozenset(overlap)))
    return conflicts


def completed_after(timeline: Timeline, started: str) -> Iterator[Instant]:
    """Completed writes that started after `started`, or completed after it (v8+: the completion time in the
    file name; v6: the completed file's modification time)."""
    for inst in timeline.iter_instants(_WRITES):
        if not inst.is_completed:
            continue
        if inst.timestamp > started:
            yield inst
            continue
        done = inst.completion_time or timeline.completion_time(inst)
        if done is not None and done > started:
            yield inst


def pending_writes_over(timeline: Timeline, started: str, file_groups: Iterable[FileGroupId],
                        files_written: Callable[[str], Iterable[str]]) -> list[Conflict]:
    """Writes still in flight that started after `started` and are known to touch some of `file_groups`: by the
    workload in their inflight file, or by the files their markers name (`files_written(instant)`, paths
    relative to the table). A table service that gives way to them never makes a writer fail (MVCC); a write
    not yet known to touch them is failed by its own check if the table service completes first, as in Hudi."""
    mine = set(file_groups)
    out = []
    for inst in timeline.inflight_writes():
        if inst.timestamp <= started:
            continue
        touched: set[FileGroupId] = set()
        if inst.is_inflight:
            content = timeline.read(inst)
            if content:
                touched |= touched_file_groups(parse_commit_metadata(content))
        for rel in files_written(inst.timestamp):
            partition, _, name = rel.rpartition("/")
            parsed = BaseFileName.parse(name) or LogFileName.parse(name)
            if parsed is not None:
                touched.add((partition, parsed.file_id))
        overlap = touched & mine
        if overlap:
            out.append(Conflict(inst, frozenset(overlap)))
    return out


def rollbacks_of(timeline: Timeline, timestamp: str) -> list[Instant]:
    """Pending rollbacks whose plan names the instant at `timestamp`: a write presumed failed (its heartbeat
    expired) must not complete once its rollback is planned, or the rollback would delete committed files."""
    out = []
    for inst in timeline.pending([Action.ROLLBACK]):
        if State.REQUESTED not in timeline.states_of(inst.timestamp):
            continue
        target = parse_rollback_plan(timeline.read_plan(inst.timestamp)).instant_to_rollback
        if target is not None and target.commit_time == timestamp:
            out.append(inst)
    return out


def clusterings_planned_over(timeline: Timeline, started: str, file_groups: Iterable[FileGroupId]) -> list[Conflict]:
    """Pending clustering plans scheduled after `started` over some of `file_groups`: a conflict for a writer
    that rejects updates to file groups being clustered (it could not see the plan when it started)."""
    mine = set(file_groups)
    out = []
    for inst in timeline.pending_replaces():
        if inst.timestamp <= started:
            continue
        overlap = clustering_file_groups(timeline, inst.timestamp) & mine
        if overlap:
            out.append(Conflict(inst, frozenset(overlap)))
    return out
