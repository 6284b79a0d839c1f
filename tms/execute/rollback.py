"""Rollback: undo what a failed instant wrote, as the rollback plan lists it (one task per request): delete
its files, and mark its log blocks rolled back with a rollback command block (written, as Java does, to a
new log file version of the same file slice, so no log file a writer may append to is touched). Then the
failed instant leaves the timeline with its markers and heartbeat, and the `rollback` instant completes.

A failed write is removed from the timeline. A compaction or clustering attempt goes back to requested
instead: its plan stays, to run again (Hudi's rollback of an inflight table service does the same)."""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tms.hudi.errors import HudiError, InstantConflictError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.log_format.rollback_blocks import write_rollback_block_file
from tms.hudi.metadata.writer import write_metadata_rollback
from tms.hudi.storage.paths import table_relative
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State
from tms.hudi.timeline.serde import (
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    parse_requested_replace_metadata,
    parse_rollback_plan,
    serialize_rollback_metadata,
)
from tms.table_service import TableService

from .action import ActionExecutor, ExecutionResult
from .fencing import Fence
from .markers import delete_markers
from .table_ref import TableRef

HEARTBEAT_DIR = ".hoodie/.heartbeat"


@dataclass(frozen=True)
class RollbackTask:
    table: TableRef
    rollback_instant: str
    failed_instant: str
    partition: str
    files: tuple[str, ...]                   # to delete, as the plan names them
    log_files: tuple[tuple[str, int], ...]   # (path as the plan names it, size) whose blocks are rolled back


@dataclass(frozen=True)
class RollbackResult:
    partition: str
    deleted: tuple[str, ...]
    failed: tuple[str, ...]
    rollback_log_files: tuple[tuple[str, int], ...]   # (absolute path, size) of the command block files
    log_files_from_failed_commit: tuple[tuple[str, int], ...]


def roll_back_file_group(task: RollbackTask, token: str) -> RollbackResult:
    storage = task.table.storage()
    deleted: list[str] = []
    failed: list[str] = []
    for path in task.files:
        (deleted if storage.delete(table_relative(storage.base_uri, path, task.partition)) else failed).append(path)
    command_files = []
    for path, _ in task.log_files:
        rel = write_rollback_block_file(storage, table_relative(storage.base_uri, path, task.partition),
                                        task.failed_instant, task.rollback_instant, token)
        command_files.append((storage.uri(rel), storage.info(rel).size))
    return RollbackResult(task.partition, tuple(deleted), tuple(failed), tuple(command_files), task.log_files)


def keeps_plan(table: HudiTable, timestamp: str, action: str) -> bool:
    """Whether rolling back `timestamp` returns it to requested (a compaction or clustering plan) rather
    than removing it (a write)."""
    if action in (Action.COMPACTION, Action.CLUSTERING):
        return True
    if action != Action.REPLACE_COMMIT or State.REQUESTED not in table.timeline.states_of(timestamp):
        return False
    plan = table.timeline.read_plan(timestamp)
    return bool(plan) and parse_requested_replace_metadata(plan).clustering_plan is not None


class RollbackExecutor(ActionExecutor):
    service = TableService.ROLLBACK
    task_function = staticmethod(roll_back_file_group)
    resumable_inflight = True

    def __init__(self, table: HudiTable, instant: Instant, transactions: TransactionManager | None = None,
                 *, restoring: bool = False):
        """`restoring`: the rollback is one step of a restore (tms.execute.restore), which undoes completed
        instants too and removes each instant rolled back from the timeline, plan and all."""
        super().__init__(table, instant, transactions)
        self.restoring = restoring
        self.plan: RollbackPlan = parse_rollback_plan(self.timeline.read_plan(self.timestamp))
        if self.plan.instant_to_rollback is None:
            raise HudiError(f"rollback plan {self.timestamp} names no instant to roll back")
        self.failed = self.plan.instant_to_rollback

    def plan_paths(self) -> Iterator[tuple[str, str]]:
        for r in self.plan.rollback_requests:
            partition = r.partition_path or ""
            yield partition, ""
            yield from ((partition, f) for f in (*r.files_to_be_deleted, *r.log_blocks_to_be_deleted))

    def validate(self) -> None:
        super().validate()
        if self.timeline.is_completed(self.failed.commit_time) and not self.restoring:
            raise InstantConflictError(
                f"rollback {self.timestamp} targets {self.failed.action} {self.failed.commit_time}, "
                "which is completed: TMS rolls back failed instants only (no restore)")

    def start(self, fence: Fence) -> list[RollbackTask]:
        self.validate()
        self.started = time.monotonic()
        self.inflight = self._inflight(fence)
        return [RollbackTask(self.ref, self.timestamp, self.failed.commit_time, r.partition_path or "",
                             tuple(r.files_to_be_deleted), tuple(r.log_blocks_to_be_deleted.items()))
                for r in self.plan.rollback_requests]

    def finish(self, results: Sequence[RollbackResult], fence: Fence) -> ExecutionResult:
        failed_ts = self.failed.commit_time
        by_partition: dict[str, RollbackPartitionMetadata] = {}
        for r in results:
            meta = by_partition.setdefault(r.partition, RollbackPartitionMetadata(partition_path=r.partition))
            meta.success_delete_files += r.deleted
            meta.failed_delete_files += r.failed
            meta.rollback_log_files.update(dict(r.rollback_log_files))
            meta.log_files_from_failed_commit.update(dict(r.log_files_from_failed_commit))
        deleted = sum(len(m.success_delete_files) for m in by_partition.values())
        metadata = RollbackMetadata(
            start_rollback_time=self.timestamp, time_taken_in_millis=int((time.monotonic() - self.started) * 1000),
            total_files_deleted=deleted, commits_rollback=[failed_ts], partition_metadata=by_partition,
            instants_rollback=[self.failed])
        with self.transactions.transaction():  # the failed instant leaves, the rollback completes: under the lock
            fence()
            # As Hudi's finishRollback: the MDT first, while the failed instant is still pending on the data
            # timeline (an MDT delta commit whose data instant is neither pending nor completed counts for
            # Java's readers); then the failed instant leaves the timeline before the rollback completes, so a
            # crash in between leaves an inflight rollback to re-run, never a completed rollback of a live one.
            write_metadata_rollback(self.table, self.timestamp, failed_ts, metadata)
            if self.restoring:
                self.timeline.delete_instant(failed_ts)
            elif keeps_plan(self.table, failed_ts, self.failed.action):
                if self.timeline.states_of(failed_ts):
                    self.timeline.revert_to_requested(failed_ts)
            else:
                self.timeline.delete_pending(failed_ts)
            delete_markers(self.storage, failed_ts)
            self.storage.delete(f"{HEARTBEAT_DIR}/{failed_ts}")
            done = self.timeline.complete(self.inflight, serialize_rollback_metadata(metadata))
        return ExecutionResult(done, self.service, len(results),
                               files_written=sum(len(m.rollback_log_files) for m in by_partition.values()),
                               files_deleted=deleted)
