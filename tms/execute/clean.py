"""Clean: delete the file versions the cleaner plan lists (one task per partition), then complete the
`clean` instant with HoodieCleanMetadata. A clean that stopped inflight is simply run again.

A partition's files are deleted in batches, each one request on S3 (DeleteObjects). A partition of more than
one batch records each batch done (`.hoodie/.temp/<clean>/clean-progress/<partition>/batch-<n>.json`, what it
deleted), so that a clean run again after it was killed deletes only the batches not yet done, and reports
what the earlier attempt deleted; the records go when the clean completes."""
from __future__ import annotations

import json
import posixpath
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.writer import write_metadata_commit
from tms.hudi.storage.paths import table_relative
from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State
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
from .markers import marker_dir
from .table_ref import TableRef

# Files deleted a request (S3's DeleteObjects takes 1,000 keys)
DELETE_BATCH = 1000


@dataclass(frozen=True)
class CleanTask:
    table: TableRef
    partition: str
    files: tuple[str, ...]  # as the plan names them
    delete_partition: bool
    instant: str = ""
    resumed: bool = False   # an earlier attempt may have recorded batches done
    batch: int = DELETE_BATCH


@dataclass(frozen=True)
class CleanResult:
    partition: str
    deleted: tuple[str, ...]   # file names, as Hudi records them
    failed: tuple[str, ...]    # not found (deleted by an earlier attempt or someone else)
    partition_deleted: bool
    progress_recorded: bool = False


def progress_dir(instant: str, partition: str) -> str:
    return posixpath.join(marker_dir(instant), "clean-progress", partition)


def _batches_done(storage: Storage, folder: str) -> dict[int, dict[str, list[str]]]:
    done = {}
    for info in storage.listdir(folder):
        if not info.is_dir and info.name.startswith("batch-") and info.name.endswith(".json"):
            done[int(info.name[len("batch-"):-len(".json")])] = json.loads(storage.read_bytes(info.path))
    return done


def clean_partition(task: CleanTask, token: str) -> CleanResult:
    storage = task.table.storage()
    rels = [table_relative(storage.base_uri, path, task.partition) for path in task.files]
    batches = [rels[at:at + task.batch] for at in range(0, len(rels), task.batch)]
    record = len(batches) > 1  # one batch is as cheap to run again as a record of it
    folder = progress_dir(task.instant, task.partition)
    done = _batches_done(storage, folder) if record and task.resumed else {}
    deleted: list[str] = []
    failed: list[str] = []
    for n, batch in enumerate(batches):
        if n not in done:
            gone = set(storage.delete_many(batch))
            done[n] = {"deleted": [r for r in batch if r in gone], "failed": [r for r in batch if r not in gone]}
            if record:
                storage.write_atomic(f"{folder}/batch-{n}.json", json.dumps(done[n]).encode(), overwrite=True)
        deleted += (r.rsplit("/", 1)[-1] for r in done[n]["deleted"])
        failed += (r.rsplit("/", 1)[-1] for r in done[n]["failed"])
    if task.delete_partition:
        storage.delete_tree(task.partition)
    return CleanResult(task.partition, tuple(deleted), tuple(failed), task.delete_partition, record)


class CleanExecutor(ActionExecutor):
    service = TableService.CLEAN
    task_function = staticmethod(clean_partition)
    resumable_inflight = True
    delete_batch = DELETE_BATCH

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
        resumed = State.INFLIGHT in self.timeline.states_of(self.timestamp)
        self.inflight = self._inflight(fence, self.plan_bytes)  # Hudi's clean.inflight holds the plan
        files = self._files_by_partition()
        dropped = set(self.plan.partitions_to_be_deleted)
        return [CleanTask(self.ref, p, tuple(files.get(p, ())), p in dropped, self.timestamp, resumed,
                          self.delete_batch)
                for p in sorted(set(files) | dropped)]

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
        if any(r.progress_recorded for r in results):
            self.storage.delete_tree(marker_dir(self.timestamp))
        return ExecutionResult(done, self.service, len(results), files_deleted=meta.total_files_deleted)
