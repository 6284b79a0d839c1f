"""Restore in place to a savepoint: Hudi's restore action. `R.restore.requested` holds the restore plan (the
instants after the savepoint, newest first); `R.restore.inflight`; each instant is rolled back by TMS's
rollback (a `rollback` instant whose plan deletes what it wrote, its metadata-table delta commit rolled back
with it) and then leaves the timeline, plan and all; `R.restore` completes with each rollback's metadata.
All of it under the table's lock, so a writer cannot complete an instant meanwhile.

Refused, in one line and before anything is written: a savepoint that does not exist or has a newer one
(its files would be deleted), a writer's instant pending (unless the caller says to roll it back too), a
pending clean, rollback or other restore, and a metadata table compacted after the savepoint (its base files
hold what the restore removes; TMS does not rebuild it).

One deviation from Java: Java leaves each step's rollback pending and deletes it once the restore completes;
TMS completes each rollback, as its rollback of a failed write does, so that every metadata-table delta commit
it writes belongs to a completed data instant."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tms.hudi.errors import HudiError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.metadata.writer import require_maintainable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State
from tms.hudi.timeline.serde import (
    InstantInfo,
    RestoreMetadata,
    RestorePlan,
    RollbackMetadata,
    parse_restore_plan,
    parse_rollback_metadata,
    parse_rollback_plan,
    serialize_restore_metadata,
    serialize_restore_plan,
    serialize_rollback_plan,
)
from tms.planning.capabilities import require_capability
from tms.planning.rollback import restore_rollback_plan
from tms.table_service import TableService

from .errors import ExecutionError
from .fencing import Fence, no_fence
from .rollback import RollbackExecutor
from .runner import Runner

_UNDONE = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.CLUSTERING)
_WRITES = (Action.COMMIT, Action.DELTA_COMMIT)


class RestoreRefused(ExecutionError):
    """A restore that cannot be done exactly: nothing was written."""


@dataclass(frozen=True)
class RestoreResult:
    instant: Instant                # the completed restore
    savepoint: str
    rolled_back: tuple[str, ...]    # instant times, in the order they were rolled back
    files_deleted: int

    def record(self) -> dict[str, Any]:
        return {"action": Action.RESTORE, "instant": self.instant.timestamp, "savepoint": self.savepoint,
                "rolled_back": list(self.rolled_back), "files_deleted": self.files_deleted}

    def summary(self) -> str:
        return (f"restore {self.instant.timestamp} to savepoint {self.savepoint}: {len(self.rolled_back)} instant(s) "
                f"rolled back, {self.files_deleted} file(s) deleted")


def _after(inst: Instant, savepoint: Instant, v8: bool) -> bool:
    """Whether `inst` comes after the savepointed commit: by completion time on v8+ (as Java's restore
    compares them), by instant time on v6; a pending instant by its instant time."""
    if v8 and inst.is_completed and inst.completion_time and savepoint.completion_time:
        return inst.completion_time > savepoint.completion_time
    return inst.timestamp > savepoint.timestamp


def instants_to_undo(table: HudiTable, savepoint: str, *, roll_back_pending_writes: bool = False) -> list[Instant]:
    """The instants a restore to `savepoint` rolls back, newest first (pending ones first); RestoreRefused
    (one line) when it cannot be done exactly."""
    tl = table.timeline
    name = table.name
    if savepoint not in {i.timestamp for i in tl.savepoints()}:
        raise RestoreRefused(f"table {name} has no savepoint at {savepoint}")
    newer = [i.timestamp for i in tl.savepoints() if i.timestamp > savepoint]
    if newer:
        raise RestoreRefused(f"table {name} has savepoints newer than {savepoint} ({', '.join(newer)}): delete them "
                             "first, the restore deletes the files they keep")
    kept = tl.get(savepoint)
    if kept is None or not kept.is_completed:
        raise RestoreRefused(f"the commit {savepoint} that the savepoint keeps is not on the timeline of {name}")
    blocking = [i for i in tl.pending((Action.CLEAN, Action.ROLLBACK, Action.RESTORE))]
    if blocking:
        raise RestoreRefused(f"table {name} has pending {', '.join(f'{i.action} {i.timestamp}' for i in blocking)}: "
                             "let them finish first")
    writes = tl.pending(_WRITES)
    if writes and not roll_back_pending_writes:
        raise RestoreRefused(f"a writer's instant is pending on table {name} "
                             f"({', '.join(f'{i.action} {i.timestamp}' for i in writes)}): stop the writer, or ask "
                             "for the restore to roll it back too (force)")
    v8 = table.config.traits.completion_times
    pending = [i for i in tl.pending(_UNDONE) if i.action in _WRITES or i.timestamp > savepoint]
    completed = [i for i in tl.completed(_UNDONE) if _after(i, kept, v8)]
    completed.sort(key=lambda i: (i.completion_time or i.timestamp) if v8 else i.timestamp, reverse=True)
    _require_metadata_restorable(table, savepoint)
    return list(reversed(pending)) + completed


def _require_metadata_restorable(table: HudiTable, savepoint: str) -> None:
    mdt = MetadataTable.open(table)
    if mdt is None:
        return
    # A v6 MDT compacts right after a data instant T as T + "001", holding nothing later than T.
    late = [i.timestamp for i in mdt.table.timeline.completed((Action.COMMIT,))
            if i.timestamp > savepoint and not i.timestamp.startswith(savepoint)]
    if late:
        raise RestoreRefused(f"the metadata table of {table.name} was compacted at {late[0]}, after savepoint "
                             f"{savepoint}: its base files hold what the restore removes (TMS does not rebuild it)")


def plan_restore(table: HudiTable, savepoint: str, *, roll_back_pending_writes: bool = False,
                 transactions: TransactionManager | None = None) -> Instant:
    """Write `R.restore.requested` (Hudi's HoodieRestorePlan, version 2) under the table's lock."""
    transactions = transactions or TransactionManager.single_writer(table)
    # As a restore's: unlike the rollback of a failed write, it undoes completed writes, whose entries in an
    # index TMS does not maintain (an expression index) would go stale.
    require_maintainable(table, TableService.RESTORE)
    require_capability(table, TableService.RESTORE)
    with transactions.transaction() as tl:
        undo = instants_to_undo(table, savepoint, roll_back_pending_writes=roll_back_pending_writes)
        plan = RestorePlan(instants_to_rollback=[InstantInfo(commit_time=i.timestamp, action=i.action) for i in undo],
                           savepoint_to_restore_timestamp=savepoint)
        return tl.create_requested(Action.RESTORE, serialize_restore_plan(plan))


def _rollback_of(table: HudiTable, target: str, after: str) -> Instant | None:
    """The rollback instant (any state) after `after` that targets `target`."""
    tl = table.timeline
    for inst in tl.iter_instants((Action.ROLLBACK,), after=after):
        if inst.is_completed:
            if target in parse_rollback_metadata(tl.read(inst)).commits_rollback:
                return inst
        else:
            aimed = parse_rollback_plan(tl.read_plan(inst.timestamp)).instant_to_rollback
            if aimed is not None and aimed.commit_time == target:
                return inst
    return None


def run_restore(table: HudiTable, restore: str, runner: Runner, fence: Fence = no_fence,
                transactions: TransactionManager | None = None) -> RestoreResult:
    """Run the requested (or interrupted) restore `restore`: each instant of its plan is rolled back, newest
    first, then the restore completes. A re-run after a crash picks up where the first run stopped."""
    transactions = transactions or TransactionManager.single_writer(table)
    started = time.monotonic()
    with transactions.transaction() as tl:
        states = tl.states_of(restore)
        if State.COMPLETED in states:
            raise HudiError(f"restore {restore} of table {table.name} is already completed")
        if State.REQUESTED not in states:
            raise HudiError(f"no requested restore {restore} on the timeline of table {table.name}")
        plan = parse_restore_plan(tl.read_plan(restore))
        fence()
        inflight = states.get(State.INFLIGHT) or tl.transition_to_inflight(states[State.REQUESTED], b"")
        by_instant: dict[str, list[RollbackMetadata]] = {}
        deleted = 0
        for target in plan.instants_to_rollback:
            ts = target.commit_time
            rollback = _rollback_of(table, ts, restore)
            if rollback is None:
                inst = tl.get(ts)
                if inst is None:
                    raise HudiError(f"instant {ts} that restore {restore} rolls back is gone from the timeline, "
                                    "with no rollback naming it")
                rollback = tl.create_requested(Action.ROLLBACK,
                                               serialize_rollback_plan(restore_rollback_plan(table, inst)))
            if not rollback.is_completed:
                executor = RollbackExecutor(table, tl.get(rollback.timestamp) or rollback, transactions,
                                            restoring=True)
                tasks = executor.start(fence)
                results = runner.map(executor.task_function, tasks, f"restore {restore}: rollback of {ts}")
                rollback = executor.finish(results, fence).instant
            meta = parse_rollback_metadata(tl.read(rollback))
            deleted += meta.total_files_deleted
            by_instant[ts] = [meta]
        metadata = RestoreMetadata(
            start_restore_time=restore, time_taken_in_millis=int((time.monotonic() - started) * 1000),
            instants_to_rollback=[i.commit_time for i in plan.instants_to_rollback],
            hoodie_restore_metadata=by_instant, restore_instant_info=list(plan.instants_to_rollback))
        fence()
        done = tl.complete(inflight, serialize_restore_metadata(metadata))
    return RestoreResult(done, plan.savepoint_to_restore_timestamp or "",
                         tuple(i.commit_time for i in plan.instants_to_rollback), deleted)


def restore_in_place(table: HudiTable, savepoint: str, runner: Runner, *, roll_back_pending_writes: bool = False,
                     fence: Fence = no_fence, transactions: TransactionManager | None = None) -> RestoreResult:
    """Restore `table` in place to its savepoint `savepoint` (plan, then run, under one hold of the lock)."""
    transactions = transactions or TransactionManager.single_writer(table)
    with transactions.transaction():
        restore = plan_restore(table, savepoint, roll_back_pending_writes=roll_back_pending_writes,
                               transactions=transactions)
        return run_restore(table, restore.timestamp, runner, fence, transactions)
