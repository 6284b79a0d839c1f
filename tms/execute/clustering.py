"""Clustering: each input group's file slices (base + logs, merged) are rewritten, optionally sorted, into new
file groups of about the target size; the instant completes as a `replacecommit` whose
`partitionToReplaceFileIds` retires the input file groups. Records keep their commit time and seqno."""
from __future__ import annotations

import json
import math
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from tms.hudi.errors import HudiError, UnsupportedTableError
from tms.hudi.fs_view.file_names import new_file_id
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.writer import write_metadata_commit
from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import KEY, merge_records, scan_logs
from tms.hudi.records.merge_budget import DEFAULT_BYTES, merge_budget_bytes
from tms.hudi.records.merge_rules import MergeRules, merge_rules
from tms.hudi.records.schema import avro_to_arrow
from tms.hudi.records.schema_evolution import internal_schema_metadata
from tms.hudi.records.sorted_runs import SortedRuns
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.lost_files import require_input_files, require_readable_inputs
from tms.hudi.timeline.conflicts import WriteConflictError, find_conflicts, pending_writes_over
from tms.hudi.timeline.instant import Action, Instant
from tms.hudi.timeline.serde import (
    ClusteringPlan,
    CommitMetadata,
    WriteStat,
    parse_requested_replace_metadata,
    serialize_commit_metadata,
)
from tms.record_ttl import drop_expired, ttl_commit_metadata, ttl_of_plan
from tms.table_service import TableService

from .action import ActionExecutor, ExecutionResult
from .base_files import (
    StreamingBaseFileWriter,
    base_file_path,
    full_schema,
    latest_data_schema,
    output_extension,
    read_base_file,
    with_file_name,
    write_base_file,
)
from .fencing import Fence
from .markers import CREATE, create_marker, delete_markers, delete_unreferenced, marked_files
from .table_ref import TableRef, ValidInstants

SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
TARGET_FILE_BYTES = "hoodie.clustering.plan.strategy.target.file.max.bytes"
DEFAULT_TARGET_FILE_BYTES = 1024 * 1024 * 1024  # Hudi's default


@dataclass(frozen=True)
class InputSlice:
    file_id: str
    base_file: str | None       # relative to the base path
    log_files: tuple[str, ...]


@dataclass(frozen=True)
class ClusteringTask:
    table: TableRef
    instant: str
    partition: str
    slices: tuple[InputSlice, ...]
    sort_columns: tuple[str, ...]
    min_output_files: int       # the plan's numOutputFileGroups
    target_file_bytes: int
    schema: str                 # the output's Avro schema (meta fields included), as JSON
    valid: ValidInstants
    extension: str = "parquet"  # of the base files to write: the table's base file format's
    ttl: tuple[str, int] | None = None  # the plan's record TTL: (field, cutoff in epoch millis)
    budget_bytes: int = DEFAULT_BYTES  # the merge's memory budget (see merge_budget)


# A group whose bytes on storage exceed this share of the budget is clustered by sorted runs: decoded, a file
# slice takes several times its bytes on storage (Parquet's encodings and compression).
IN_MEMORY_SHARE = 8


def cluster_group(task: ClusteringTask, token: str) -> list[WriteStat]:
    """Rewrite one input group, without the records the plan's record TTL expired; one write stat per new file
    group."""
    storage, config = task.table.storage(), task.table.config()
    avro_schema = json.loads(task.schema)
    arrow_schema = avro_to_arrow(avro_schema)
    rules = merge_rules(config)
    inputs = [p for s in task.slices for p in ((s.base_file,) if s.base_file else ()) + s.log_files]
    require_readable_inputs(storage, f"clustering {task.instant}", inputs)
    input_bytes = sum(storage.info(p).size for p in inputs)
    if _by_sorted_runs(task, input_bytes):
        return _cluster_by_sorted_runs(task, token, rules, arrow_schema, avro_schema, input_bytes)
    parts = []
    for s in task.slices:
        base = read_base_file(storage, s.base_file, arrow_schema) if s.base_file else None
        scan = scan_logs(storage, list(s.log_files), task.valid, arrow_schema, rules)
        parts.append(merge_records(base, scan, rules, arrow_schema))
    rows = pa.concat_tables(parts)
    if task.ttl is not None:
        rows = drop_expired(rows, *task.ttl)
    if task.sort_columns:  # ties in record key order: the order of the sorted runs' merge too
        rows = rows.sort_by([(c, "ascending") for c in (*task.sort_columns, KEY)])
    files = min(rows.num_rows, max(task.min_output_files, math.ceil(input_bytes / task.target_file_bytes)))
    stats = []
    for chunk in _split(rows, files):
        file_id = new_file_id()
        rel = base_file_path(task.partition, file_id, token, task.instant, task.extension)
        create_marker(storage, task.instant, rel, CREATE)
        size = write_base_file(storage, rel, with_file_name(chunk, rel.rsplit("/", 1)[-1]), avro_schema)
        stats.append(_write_stat(task, file_id, rel, chunk.num_rows, size))
    return stats


def _write_stat(task: ClusteringTask, file_id: str, rel: str, rows: int, size: int) -> WriteStat:
    return WriteStat(file_id=file_id, path=rel, prev_commit="null", partition_path=task.partition,
                     num_writes=rows, num_inserts=rows, total_write_bytes=size, file_size_in_bytes=size)


def _by_sorted_runs(task: ClusteringTask, input_bytes: int) -> bool:
    """A Parquet group too big to merge and sort in memory (Lance files are read whole: in memory as before)."""
    parquet = task.extension == "parquet" and all(
        (s.base_file or ".parquet").endswith(".parquet") for s in task.slices)
    return parquet and input_bytes * IN_MEMORY_SHARE > task.budget_bytes


def _cluster_by_sorted_runs(task: ClusteringTask, token: str, rules: MergeRules, arrow_schema: pa.Schema,
                            avro_schema: dict, input_bytes: int) -> list[WriteStat]:
    """The group within the task's memory budget: each slice merged by `BoundedMerge`, its rows gathered into
    runs sorted by the sort columns and the record key (by the record key alone without sort columns), spilled
    and merged k ways (`SortedRuns`); the output files are written as the merged rows come."""
    storage = task.table.storage()
    with tempfile.TemporaryDirectory(prefix="tms-cluster-") as tmp:
        runs = SortedRuns(arrow_schema, [*task.sort_columns, KEY], task.budget_bytes, tmp)

        def add(rows: pa.Table) -> None:
            runs.add(drop_expired(rows, *task.ttl) if task.ttl is not None else rows)

        for s in task.slices:
            BoundedMerge(storage, s.base_file, list(s.log_files), task.valid, rules, arrow_schema,
                         task.budget_bytes, spill_dir=tmp).run(add)
        files = min(runs.rows, max(task.min_output_files, math.ceil(input_bytes / task.target_file_bytes)))
        try:
            return _write_files(task, token, runs.sorted_batches(), runs.rows, files, arrow_schema, avro_schema)
        finally:
            runs.close()


def _write_files(task: ClusteringTask, token: str, batches: Iterator[pa.Table], rows: int, files: int,
                 arrow_schema: pa.Schema, avro_schema: dict) -> list[WriteStat]:
    """`rows` rows in order into `files` new files of equal row counts (as `_split` cuts them), streamed."""
    if files <= 0:
        return []
    storage = task.table.storage()
    per_file = math.ceil(rows / files)
    stats: list[WriteStat] = []
    writer: StreamingBaseFileWriter | None = None
    file_id = rel = ""
    in_file = 0

    def finish() -> None:
        if writer is not None:
            stats.append(_write_stat(task, file_id, rel, writer.rows, writer.close() or 0))

    for batch in batches:
        while batch.num_rows:
            if writer is None or in_file == per_file:
                finish()
                file_id = new_file_id()
                rel = base_file_path(task.partition, file_id, token, task.instant, task.extension)
                create_marker(storage, task.instant, rel, CREATE)
                writer, in_file = StreamingBaseFileWriter(storage, rel, arrow_schema, avro_schema), 0
            take = min(per_file - in_file, batch.num_rows)
            writer.write(batch.slice(0, take))
            in_file += take
            batch = batch.slice(take)
    finish()
    return stats


def _split(rows: pa.Table, files: int) -> list[pa.Table]:
    if files <= 0:
        return []
    per_file = math.ceil(rows.num_rows / files)
    return [rows.slice(start, per_file) for start in range(0, rows.num_rows, per_file)]


class ClusteringExecutor(ActionExecutor):
    service = TableService.CLUSTERING
    task_function = staticmethod(cluster_group)

    def __init__(self, table: HudiTable, instant: Instant, transactions: TransactionManager | None = None):
        super().__init__(table, instant, transactions)
        plan = parse_requested_replace_metadata(self.timeline.read_plan(self.timestamp)).clustering_plan
        if plan is None:
            raise HudiError(f"replacecommit {self.timestamp} holds no clustering plan")
        self.plan: ClusteringPlan = plan
        params = (plan.strategy.strategy_params if plan.strategy else None) or {}
        self.sort_columns = tuple(c.strip() for c in params.get(SORT_COLUMNS, "").split(",") if c.strip())
        self.target_file_bytes = int(params.get(TARGET_FILE_BYTES) or DEFAULT_TARGET_FILE_BYTES)
        self.budget_bytes = merge_budget_bytes({}, self.config.props)

    def plan_paths(self) -> Iterator[tuple[str, str]]:
        for group in self.plan.input_groups:
            for s in group.slices:
                partition = s.partition_path or ""
                yield partition, s.file_id or ""
                yield from ((partition, p) for p in (s.data_file_path, *s.delta_file_paths) if p)

    def validate(self) -> None:
        super().validate()
        for group in self.plan.input_groups:
            if len({s.partition_path or "" for s in group.slices}) > 1:
                raise HudiError(f"clustering {self.timestamp} has a group spanning partitions; "
                                "groups are per partition")
            if any(s.bootstrap_file_path for s in group.slices):
                raise UnsupportedTableError(f"clustering {self.timestamp} reads bootstrap files; TMS does not")
        # The input file groups are replaced: a write that started before the plan could still add to them.
        self._require_no_pending_writes_before()
        # ... and replaced for good: each must be whole, or the records of a lost file are gone with it.
        groups = {(s.partition_path or "", s.file_id or "") for g in self.plan.input_groups for s in g.slices}
        inputs = [self._relative(p, s.partition_path or "") for g in self.plan.input_groups for s in g.slices
                  for p in ([s.data_file_path] if s.data_file_path else []) + list(s.delta_file_paths)]
        require_input_files(self.table, f"clustering {self.timestamp}", groups, inputs)

    def start(self, fence: Fence) -> list[ClusteringTask]:
        self.validate()
        self.data_schema = latest_data_schema(self.table)
        fields = {f["name"] for f in self.data_schema["fields"]}
        unknown = [c for c in self.sort_columns if c not in fields]
        if unknown:
            raise HudiError(f"clustering {self.timestamp} sorts by columns the table lacks: {', '.join(unknown)}")
        self.inflight = self._inflight(fence)
        schema = json.dumps(full_schema(self.data_schema))
        extension = output_extension(self.table)
        valid = ValidInstants.of(self.timeline)
        tasks = []
        for group in self.plan.input_groups:
            if not group.slices:
                continue
            partition = group.slices[0].partition_path or ""
            if any(s.file_id is None for s in group.slices):
                raise HudiError(f"clustering {self.timestamp} has an input slice without a file id")
            slices = tuple(InputSlice(
                s.file_id or "",
                self._relative(s.data_file_path, partition) if s.data_file_path else None,
                tuple(self._relative(p, partition) for p in s.delta_file_paths)) for s in group.slices)
            tasks.append(ClusteringTask(self.ref, self.timestamp, partition, slices, self.sort_columns,
                                        max(1, group.num_output_file_groups or 1), self.target_file_bytes,
                                        schema, valid, extension, ttl_of_plan(self.plan.extra_metadata),
                                        self.budget_bytes))
        return tasks

    def finish(self, results: Sequence[list[WriteStat]], fence: Fence) -> ExecutionResult:
        stats = [s for group in results for s in group]
        delete_unreferenced(self.storage, self.timestamp, {s.path for s in stats if s.path})
        written: dict[str, list[WriteStat]] = defaultdict(list)
        for s in stats:
            written[s.partition_path or ""].append(s)  # cluster_group sets it
        replaced: dict[str, list[str]] = defaultdict(list)
        for group in self.plan.input_groups:
            for input_slice in group.slices:
                replaced[input_slice.partition_path or ""].append(input_slice.file_id or "")  # start checked it
        meta = CommitMetadata(partition_to_write_stats=dict(written),
                              extra_metadata={"schema": json.dumps(self.data_schema),
                                              **internal_schema_metadata(self.table),
                                              **ttl_commit_metadata(self.plan.extra_metadata)},
                              operation_type="CLUSTER", partition_to_replace_file_ids=dict(replaced))
        with self.transactions.transaction():
            # The writer wins: a write into a file group it rewrites (Hudi's SparkAllowUpdateStrategy), completed
            # after the plan or known to be in flight, refuses the commit; dispatch rolls the attempt back.
            groups = {(s.partition_path or "", s.file_id) for g in self.plan.input_groups for s in g.slices
                      if s.file_id}
            conflicts = find_conflicts(self.timeline, self.timestamp, groups) + pending_writes_over(
                self.timeline, self.timestamp, groups, lambda ts: marked_files(self.storage, ts))
            if conflicts:
                raise WriteConflictError(self.service, self.timestamp, conflicts,
                                         "the writer wins: this clustering is rolled back and its plan dropped")
            fence()
            # the MDT first, then the data
            write_metadata_commit(self.table, self.timestamp, Action.REPLACE_COMMIT, meta)
            done = self.timeline.complete(self.inflight, serialize_commit_metadata(meta, self.config.version))
        delete_markers(self.storage, self.timestamp)
        return ExecutionResult(done, self.service, len(results), len(stats),
                               sum(s.file_size_in_bytes for s in stats))
