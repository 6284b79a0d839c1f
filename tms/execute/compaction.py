"""Compaction: each operation of the plan (one file group) merges its base file with exactly the plan's log
files into a new base file `<fileId>_<token>_<Tc>.<format>` (parquet or lance, the table's); the instant
completes as a `commit` with `compacted: true`.

Only the plan's log files are read: logs written after the plan belong to the new file slice that the
compaction instant opened. Blocks of instants that are not completed, or were rolled back, are skipped.
Records keep their commit time and seqno; only `_hoodie_file_name` changes."""
from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tms.hudi.errors import HudiError, UnsupportedTableError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.writer import write_metadata_commit
from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import LogScan, merge_records, record_keys, scan_logs
from tms.hudi.records.merge_budget import DEFAULT_BYTES, merge_budget_bytes
from tms.hudi.records.merge_rules import MergeRules, merge_rules
from tms.hudi.records.schema import avro_to_arrow, empty_table
from tms.hudi.records.schema_evolution import internal_schema_metadata
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.lost_files import require_input_files, require_readable_inputs
from tms.hudi.timeline.instant import Action, Instant
from tms.hudi.timeline.serde import (
    CommitMetadata,
    CompactionPlan,
    RuntimeStats,
    WriteStat,
    parse_compaction_plan,
    serialize_commit_metadata,
)
from tms.planning.compaction_strategy import TOTAL_IO_READ_MB, TOTAL_LOG_FILES_SIZE
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
from .markers import CREATE, MERGE, create_marker, delete_markers, delete_unreferenced
from .table_ref import TableRef, ValidInstants


@dataclass(frozen=True)
class CompactionTask:
    table: TableRef
    instant: str
    partition: str
    file_id: str
    base_instant: str
    base_file: str | None       # relative to the base path
    log_files: tuple[str, ...]  # relative to the base path, in the plan's order
    schema: str                 # the output's Avro schema (meta fields included), as JSON
    valid: ValidInstants
    extension: str = "parquet"  # of the base files to write: the table's base file format's
    ttl: tuple[str, int] | None = None  # the plan's record TTL: (field, cutoff in epoch millis)
    budget_bytes: int = DEFAULT_BYTES  # the merge's memory budget (see merge_budget)


def compact_file_group(task: CompactionTask, token: str) -> WriteStat | None:
    """Merge one file group into a new base file, without the records the plan's record TTL expired. None when
    a log-only file group has no record left (every block rolled back, every record deleted): Hudi writes
    nothing for it either (one whose records expired is written, empty, so that the record index drops them).
    Parquet file groups are merged within the task's memory budget (`BoundedMerge`); Lance ones, and those of
    a plan with a record TTL, in memory."""
    if task.ttl is None and task.extension == "parquet" and (task.base_file is None
                                                             or task.base_file.endswith(".parquet")):
        return _compact_within_budget(task, token)
    return compact_in_memory(task, token)


def compact_in_memory(task: CompactionTask, token: str) -> WriteStat | None:
    """The merge of the whole file group in memory (Lance file groups, record TTL; bench/merge_memory.py
    compares)."""
    storage, config = task.table.storage(), task.table.config()
    _require_inputs(task)
    avro_schema = json.loads(task.schema)
    arrow_schema = avro_to_arrow(avro_schema)
    started = time.monotonic()
    rules = merge_rules(config)
    scan = scan_logs(storage, list(task.log_files), task.valid, arrow_schema, rules)
    scan_ms = _ms_since(started)
    base = read_base_file(storage, task.base_file, arrow_schema) if task.base_file else None
    merged = merge_records(base, scan, rules, arrow_schema)
    kept = drop_expired(merged, *task.ttl) if task.ttl is not None else merged
    expired = merged.num_rows - kept.num_rows
    if base is None and kept.num_rows == 0 and not expired:
        return None
    rel = base_file_path(task.partition, task.file_id, token, task.instant, task.extension)
    create_marker(storage, task.instant, rel, MERGE if base is not None else CREATE)
    size = write_base_file(storage, rel, with_file_name(kept, rel.rsplit("/", 1)[-1]), avro_schema)
    counts = _record_counts(base, scan, merged, rules)
    return WriteStat(
        file_id=task.file_id, path=rel, prev_commit=task.base_instant, partition_path=task.partition,
        num_writes=kept.num_rows, num_deletes=counts["deletes"] + expired, num_update_writes=counts["updates"],
        num_inserts=counts["inserts"], total_write_bytes=size, file_size_in_bytes=size,
        total_log_records=counts["log_records"], total_log_files_compacted=len(task.log_files),
        total_log_size_compacted=sum(storage.info(p).size for p in task.log_files),
        total_updated_records_compacted=counts["log_keys"], total_log_blocks=scan.blocks_read,
        total_corrupt_log_block=scan.corrupt_blocks, total_rollback_blocks=scan.rollback_blocks,
        prev_base_file=task.base_file.rsplit("/", 1)[-1] if task.base_file else None,
        total_log_read_time_ms=scan_ms,
        runtime_stats=RuntimeStats(total_scan_time=scan_ms, total_upsert_time=_ms_since(started) if base else 0,
                                   total_create_time=0 if base else _ms_since(started)))


def _compact_within_budget(task: CompactionTask, token: str) -> WriteStat | None:
    storage, config = task.table.storage(), task.table.config()
    _require_inputs(task)
    avro_schema = json.loads(task.schema)
    arrow_schema = avro_to_arrow(avro_schema)
    started = time.monotonic()
    rel = base_file_path(task.partition, task.file_id, token, task.instant, task.extension)
    merge = BoundedMerge(storage, task.base_file, list(task.log_files), task.valid, merge_rules(config),
                         arrow_schema, task.budget_bytes)
    writer = StreamingBaseFileWriter(storage, rel, arrow_schema, avro_schema, always=task.base_file is not None)
    marked = False

    def write(rows: pa.Table) -> None:
        nonlocal marked
        if not marked:  # the marker before the file, as Hudi's write handles create them
            create_marker(storage, task.instant, rel, MERGE if task.base_file is not None else CREATE)
            marked = True
        writer.write(rows)

    stats = merge.run(write)
    if task.base_file is not None and not marked:
        write(empty_table(arrow_schema))
    size = writer.close()
    if size is None:
        return None
    return WriteStat(
        file_id=task.file_id, path=rel, prev_commit=task.base_instant, partition_path=task.partition,
        num_writes=stats.rows_written, num_deletes=stats.deletes, num_update_writes=stats.updates,
        num_inserts=stats.inserts, total_write_bytes=size, file_size_in_bytes=size,
        total_log_records=stats.log_records, total_log_files_compacted=len(task.log_files),
        total_log_size_compacted=sum(storage.info(p).size for p in task.log_files),
        total_updated_records_compacted=stats.log_keys, total_log_blocks=stats.blocks_read,
        total_corrupt_log_block=stats.corrupt_blocks, total_rollback_blocks=stats.rollback_blocks,
        prev_base_file=task.base_file.rsplit("/", 1)[-1] if task.base_file else None,
        total_log_read_time_ms=stats.scan_ms,
        runtime_stats=RuntimeStats(total_scan_time=stats.scan_ms,
                                   total_upsert_time=_ms_since(started) if task.base_file else 0,
                                   total_create_time=0 if task.base_file else _ms_since(started)))


def _require_inputs(task: CompactionTask) -> None:
    require_readable_inputs(task.table.storage(), f"compaction {task.instant} of file group {task.file_id}",
                            ((task.base_file,) if task.base_file else ()) + task.log_files)


def _record_counts(base: pa.Table | None, scan: LogScan, merged: pa.Table, rules: MergeRules) -> dict[str, int]:
    """Write-stat counts. Only keys the logs touch can differ between base and output, so the sets compared
    are those keys' (small) sets, found by probing the big key columns against them (virtual keys: the keys
    the record key fields make)."""
    log_keys = pc.unique(pa.chunked_array(
        [record_keys(t, rules) for t in scan.data]
        + [pa.array([d[0] for d in dels], pa.string()) for _, dels in scan.deletes], pa.string()))
    in_base = _touched(base, log_keys, rules) if base is not None else pa.array([], pa.string())
    in_output = _touched(merged, log_keys, rules)
    return {
        "log_records": sum(t.num_rows for t in scan.data) + sum(len(d) for _, d in scan.deletes),
        "log_keys": len(log_keys),
        "deletes": _count(pc.invert(pc.is_in(in_base, value_set=in_output))),
        "updates": _count(pc.is_in(in_output, value_set=in_base)),
        "inserts": _count(pc.invert(pc.is_in(in_output, value_set=in_base))),
    }


def _touched(rows: pa.Table, log_keys: pa.Array, rules: MergeRules) -> pa.Array:
    keys = record_keys(rows, rules)
    return keys.filter(pc.is_in(keys, value_set=log_keys))


def _count(mask: pa.Array) -> int:
    return pc.sum(mask).as_py() or 0


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


_MB = 1024 * 1024


class CompactionExecutor(ActionExecutor):
    service = TableService.COMPACTION
    task_function = staticmethod(compact_file_group)

    def __init__(self, table: HudiTable, instant: Instant, transactions: TransactionManager | None = None):
        super().__init__(table, instant, transactions)
        self.budget_bytes = merge_budget_bytes({}, self.config.props)
        self.plan: CompactionPlan = parse_compaction_plan(self.timeline.read_plan(self.timestamp))

    def plan_paths(self) -> Iterator[tuple[str, str]]:
        for op in self.plan.operations:
            partition = op.partition_path or ""
            yield partition, op.file_id or ""  # the new base file is named after it
            yield from ((partition, p) for p in (op.data_file_path, *op.delta_file_paths) if p)

    def validate(self) -> None:
        super().validate()
        if any(op.bootstrap_file_path for op in self.plan.operations):
            raise UnsupportedTableError(f"compaction {self.timestamp} reads bootstrap files; TMS does not")
        self._require_input_files()
        if not self.config.traits.log_files_named_by_writer:
            # v6 slices by instant time: a delta commit that started before Tc writes into the slice being
            # compacted, so the plan waits for it (and is synced with its log files by the planner).
            self._require_no_pending_writes_before()

    def _require_input_files(self) -> None:
        """Every file of the file groups the plan compacts is there as written: a compaction over a slice that
        lost a file would write a base file without its records."""
        groups, inputs = set(), []
        for op in self.plan.operations:
            partition = op.partition_path or ""
            groups.add((partition, op.file_id or ""))
            inputs += [self._relative(p, partition) for p in ([op.data_file_path] if op.data_file_path else [])
                       + list(op.delta_file_paths)]
        require_input_files(self.table, f"compaction {self.timestamp}", groups, inputs)

    def start(self, fence: Fence) -> list[CompactionTask]:
        self.validate()
        self.data_schema = latest_data_schema(self.table)
        self.inflight = self._inflight(fence)
        schema = json.dumps(full_schema(self.data_schema))
        extension = output_extension(self.table)
        valid = ValidInstants.of(self.timeline)
        tasks = []
        for op in self.plan.operations:
            partition = op.partition_path or ""
            if op.file_id is None or op.base_instant_time is None:
                raise HudiError(f"compaction {self.timestamp} has an operation without a file id or base instant")
            tasks.append(CompactionTask(
                table=self.ref, instant=self.timestamp, partition=partition, file_id=op.file_id,
                base_instant=op.base_instant_time,
                base_file=self._relative(op.data_file_path, partition) if op.data_file_path else None,
                log_files=tuple(self._relative(p, partition) for p in op.delta_file_paths),
                schema=schema, valid=valid, extension=extension, ttl=ttl_of_plan(self.plan.extra_metadata),
                budget_bytes=self.budget_bytes))
        return tasks

    def task_bytes(self, tasks: Sequence[CompactionTask]) -> list[int]:
        """What each operation reads, from the metrics its planner captured (Hudi's CompactionStrategy: whole MB
        read, the log files' exact bytes); a plan without them counts each operation as small."""
        return [max(int(op.metrics.get(TOTAL_IO_READ_MB, 0)) * _MB, int(op.metrics.get(TOTAL_LOG_FILES_SIZE, 0)))
                for op in self.plan.operations]

    def finish(self, results: Sequence[WriteStat | None], fence: Fence) -> ExecutionResult:
        stats = [s for s in results if s is not None]
        delete_unreferenced(self.storage, self.timestamp, {s.path for s in stats if s.path})
        by_partition: dict[str, list[WriteStat]] = defaultdict(list)
        for s in stats:
            by_partition[s.partition_path or ""].append(s)  # compact_file_group sets it
        meta = CommitMetadata(partition_to_write_stats=dict(by_partition), compacted=True,
                              extra_metadata={"schema": json.dumps(self.data_schema),
                                              **internal_schema_metadata(self.table),
                                              **ttl_commit_metadata(self.plan.extra_metadata)},
                              operation_type="COMPACT")
        with self.transactions.transaction():  # compaction never conflicts: later writes go to the next slice
            fence()
            # the MDT first, then the data instant
            write_metadata_commit(self.table, self.timestamp, Action.COMMIT, meta)
            done = self.timeline.complete(self.inflight, serialize_commit_metadata(meta, self.config.version))
        delete_markers(self.storage, self.timestamp)
        return ExecutionResult(done, self.service, len(results), len(stats),
                               sum(s.file_size_in_bytes for s in stats))
