"""Clean: delete the file versions the cleaner plan lists, then complete the `clean` instant with
HoodieCleanMetadata. A clean that stopped inflight is simply run again.

Files are deleted in batches, each one request on S3 (DeleteObjects). A task takes either one partition of more
than a batch of files, or as many smaller partitions as one batch holds: a clean of a few files in each of
thousands of partitions makes a request per thousand files, not one per partition. A partition of more than
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
class PartitionClean:
    partition: str
    files: tuple[str, ...]  # as the plan names them
    delete_partition: bool


@dataclass(frozen=True)
class CleanTask:
    table: TableRef
    partitions: tuple[PartitionClean, ...]  # one of more than `batch` files, or several of at most `batch` in all
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


def clean_partitions(task: CleanTask, token: str) -> list[CleanResult]:
    storage = task.table.storage()
    rels = {p.partition: [table_relative(storage.base_uri, path, p.partition) for path in p.files]
            for p in task.partitions}
    if len(task.partitions) == 1 and len(rels[task.partitions[0].partition]) > task.batch:
        return [_clean_big_partition(task, storage, task.partitions[0], rels[task.partitions[0].partition])]
    # One batch (one request) for all: as cheap to run again as a record of it.
    every = [r for p in task.partitions for r in rels[p.partition]]
    gone = set(storage.delete_many(every)) if every else set()
    results = []
    for p in task.partitions:
        if p.delete_partition:
            storage.delete_tree(p.partition)
        names = rels[p.partition]
        results.append(CleanResult(p.partition, tuple(r.rsplit("/", 1)[-1] for r in names if r in gone),
                                   tuple(r.rsplit("/", 1)[-1] for r in names if r not in gone), p.delete_partition))
    return results


def _clean_big_partition(task: CleanTask, storage: Storage, p: PartitionClean, rels: list[str]) -> CleanResult:
    """A partition of more than one batch: each batch done is recorded, and not deleted again when the clean
    runs again after an attempt was killed."""
    batches = [rels[at:at + task.batch] for at in range(0, len(rels), task.batch)]
    folder = progress_dir(task.instant, p.partition)
    done = _batches_done(storage, folder) if task.resumed else {}
    deleted: list[str] = []
    failed: list[str] = []
    for n, batch in enumerate(batches):
        if n not in done:
            gone = set(storage.delete_many(batch))
            done[n] = {"deleted": [r for r in batch if r in gone], "failed": [r for r in batch if r not in gone]}
            storage.write_atomic(f"{folder}/batch-{n}.json", json.dumps(done[n]).encode(), overwrite=True)
        deleted += (r.rsplit("/", 1)[-1] for r in done[n]["deleted"])
        failed += (r.rsplit("/", 1)[-1] for r in done[n]["failed"])
    if p.delete_partition:
        storage.delete_tree(p.partition)
    return CleanResult(p.partition, tuple(deleted), tuple(failed), p.delete_partition, True)


def _tasks(partitions: list[PartitionClean], batch: int) -> Iterator[tuple[PartitionClean, ...]]:
    """The partitions in tasks: one of more than `batch` files alone, smaller ones together up to `batch`."""
    together: list[PartitionClean] = []
    files = 0
    for p in partitions:
        if len(p.files) > batch:
            yield (p,)
            continue
        if together and files + len(p.files) > batch:
            yield tuple(together)
            together, files = [], 0
        together.append(p)
        files += len(p.files)
    if together:
        yield tuple(together)


class CleanExecutor(ActionExecutor):
    service = TableService.CLEAN
    task_function = staticmethod(clean_partitions)
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
        partitions = [PartitionClean(p, tuple(files.get(p, ())), p in dropped) for p in sorted(set(files) | dropped)]
        return [CleanTask(self.ref, together, self.timestamp, resumed, self.delete_batch)
                for together in _tasks(partitions, self.delete_batch)]

    def finish(self, per_task: Sequence[list[CleanResult]], fence: Fence) -> ExecutionResult:
        results = [r for task_results in per_task for r in task_results]
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
