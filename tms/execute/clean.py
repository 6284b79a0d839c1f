"""Clean: delete the file versions the cleaner plan lists (one task per partition), then complete the
`clean` instant with HoodieCleanMetadata. A clean that stopped inflight is simply run again."""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.writer import write_metadata_commit
from tms.hudi.storage.paths import table_relative
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant
from tms.hudi.timeline.serde import (
    CleanerPlan,
    CleanMetadata,
    CleanPartitionMetadata,
    parse_cleaner_plan,
    serialize_clean_metadata,
)
from tms.table_service import TableService

from .action import ActionExecutor, ExecutionResult
from .errors import UnsafePlanError
from .fencing import Fence
from .table_ref import TableRef


@dataclass(frozen=True)
class CleanTask:
    table: TableRef
    partition: str
    files: tuple[str, ...]  # as the plan names them
    delete_partition: bool


@dataclass(frozen=True)
class CleanResult:
    partition: str
    deleted: tuple[str, ...]   # file names, as Hudi records them
    failed: tuple[str, ...]    # not found (deleted by an earlier attempt or someone else)
    partition_deleted: bool


def clean_partition(task: CleanTask, token: str) -> CleanResult:
    storage = task.table.storage()
    deleted: list[str] = []
    failed: list[str] = []
    for path in task.files:
        rel = table_relative(storage.base_uri, path, task.partition)
        (deleted if storage.delete(rel) else failed).append(rel.rsplit("/", 1)[-1])
    if task.delete_partition:
        storage.delete_tree(task.partition)
    return CleanResult(task.partition, tuple(deleted), tuple(failed), task.delete_partition)


class CleanExecutor(ActionExecutor):
    service = TableService.CLEAN
    task_function = staticmethod(clean_partition)
    resumable_inflight = True

    def __init__(self, table: HudiTable, instant: Instant, transactions: TransactionManager | None = None):
        super().__init__(table, instant, transactions)
        self.plan_bytes = self.timeline.read_plan(self.timestamp)
        self.plan: CleanerPlan = parse_cleaner_plan(self.plan_bytes)

    def validate(self) -> None:
        if "" in self.plan.partitions_to_be_deleted:  # the partition of a non-partitioned table: all of it
            raise UnsafePlanError(f"clean {self.timestamp} of table {self.config.name} is refused: it deletes the "
                                  "whole table as a partition; nothing was run")
        super().validate()

    def plan_paths(self) -> Iterator[tuple[str, str]]:
        for partition, files in self._files_by_partition().items():
            yield partition, ""
            yield from ((partition, f) for f in files)
        yield from ((p, "") for p in self.plan.partitions_to_be_deleted)

    def _files_by_partition(self) -> dict[str, list[str]]:
        if self.plan.file_paths_to_be_deleted_per_partition:
            return {p: [f.file_path for f in infos if f.file_path]
                    for p, infos in self.plan.file_paths_to_be_deleted_per_partition.items()}
        return {p: list(names) for p, names in self.plan.files_to_be_deleted_per_partition.items()}  # v1 plans

    def start(self, fence: Fence) -> list[CleanTask]:
        self.validate()
        self.started = time.monotonic()
        self.inflight = self._inflight(fence, self.plan_bytes)  # Hudi's clean.inflight holds the plan
        files = self._files_by_partition()
        dropped = set(self.plan.partitions_to_be_deleted)
        return [CleanTask(self.ref, p, tuple(files.get(p, ())), p in dropped) for p in sorted(set(files) | dropped)]

    def finish(self, results: Sequence[CleanResult], fence: Fence) -> ExecutionResult:
        earliest = self.plan.earliest_instant_to_retain
        meta = CleanMetadata(
            start_clean_time=self.timestamp, time_taken_in_millis=int((time.monotonic() - self.started) * 1000),
            total_files_deleted=sum(len(r.deleted) for r in results),
            earliest_commit_to_retain=earliest.timestamp if earliest else "",
            last_completed_commit_timestamp=self.plan.last_completed_commit_timestamp or "",
            partition_metadata={r.partition: CleanPartitionMetadata(
                partition_path=r.partition, policy=self.plan.policy,
                delete_path_patterns=list(r.deleted + r.failed), success_delete_files=list(r.deleted),
                failed_delete_files=list(r.failed), is_partition_deleted=r.partition_deleted) for r in results},
            extra_metadata=self.plan.extra_metadata)
        with self.transactions.transaction():
            fence()
            # the MDT first, then the data instant
            write_metadata_commit(self.table, self.timestamp, Action.CLEAN, meta)
            done = self.timeline.complete(self.inflight, serialize_clean_metadata(meta))
        return ExecutionResult(done, self.service, len(results), files_deleted=meta.total_files_deleted)
