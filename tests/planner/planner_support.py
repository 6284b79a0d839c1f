"""Helpers of the planner tests: tables written by the writer with the model of their rows, and minimal
stand-ins for the executors (compaction, clean, rollback) so a plan's effect can be read back with hudi-rs."""
from __future__ import annotations

import json
import posixpath
import time
from collections import defaultdict
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from table_model import CITIES, COLUMNS, ModelledTable, rec  # noqa: F401 (re-exported to the tests)
from tms.db.policy import TablePolicy
from tms.hudi.file_names import BaseFileName, LogFileName
from tms.hudi.fs_view import BaseFile, FileSlice, LogFile
from tms.hudi.instant import ROLLBACK, State
from tms.hudi.log_format import rollback_command_block
from tms.hudi.merge import merge_slice
from tms.hudi.serde import (CommitMetadata, InstantInfo, RollbackMetadata, RollbackPartitionMetadata, WriteStat,
                            parse_cleaner_plan, parse_compaction_plan, parse_rollback_plan,
                            serialize_commit_metadata, serialize_rollback_metadata)
from tms.hudi.table import HudiTable
from tms.hudi.writer import HudiWriter
from tms.planner.footprint import marker_dir
from tms.planner.paths import relative_path
from tms.planner.triggers import is_clustering

def now() -> datetime:
    return datetime.now(timezone.utc)


def policy(**options) -> TablePolicy:
    """A policy from Hudi option names (dots written as `__`): policy(hoodie__cleaner__policy=...)."""
    return TablePolicy().merged({k.replace("__", "."): v for k, v in options.items()})


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def run_compaction(table: HudiTable, tc: str) -> None:
    """Execute a compaction plan as written: merge each operation's base and log files (blocks of completed
    instants only) into a new base file at `tc`, and complete the commit."""
    tl = table.timeline
    tl.reload()
    plan = parse_compaction_plan(tl.read_plan(tc))
    inflight = tl.transition_to_inflight(tl.states_of(tc)[State.REQUESTED])
    stats = defaultdict(list)
    for op in plan.operations:
        part = op.partition_path or ""
        base = (BaseFile(_rel(part, op.data_file_path), 0, BaseFileName.parse(op.data_file_path))
                if op.data_file_path else None)
        logs = [LogFile(_rel(part, n), 0, LogFileName.parse(n)) for n in op.delta_file_paths]
        merged = merge_slice(table.storage, table.config, FileSlice(part, op.file_id, op.base_instant_time, base, logs),
                             tl.is_completed)
        name = str(BaseFileName(op.file_id, "0-0-0", tc))
        merged = merged.set_column(merged.schema.get_field_index("_hoodie_file_name"), "_hoodie_file_name",
                                   pa.array([name] * merged.num_rows, pa.string()))
        pq.write_table(merged, table.storage.full(_rel(part, name)))
        stats[part].append(WriteStat(file_id=op.file_id, path=_rel(part, name), prev_commit=op.base_instant_time,
                                     num_writes=merged.num_rows, partition_path=part))
    schema = HudiWriter(table).data_avro_schema()
    meta = CommitMetadata(partition_to_write_stats=dict(stats), compacted=True, operation_type="COMPACT",
                          extra_metadata={"schema": json.dumps(schema)})
    tl.complete(inflight, serialize_commit_metadata(meta, table.config.version))


def run_clean(table: HudiTable, ts: str) -> list[str]:
    """Delete what a cleaner plan lists (the plan stays requested: readers ignore clean instants)."""
    table.timeline.reload()
    plan = parse_cleaner_plan(table.timeline.read_plan(ts))
    deleted = [relative_path(table, info.file_path)
               for infos in plan.file_paths_to_be_deleted_per_partition.values() for info in infos]
    for rel in deleted:
        assert table.storage.delete(rel), f"{rel} was already gone"
    return deleted


def run_rollback(table: HudiTable, rollback_ts: str) -> RollbackMetadata:
    """Execute a rollback plan as Hudi does: delete the listed files, append a rollback command block to
    the listed v6 log files, remove the failed instant (a compaction or clustering attempt goes back to
    requested), and complete the rollback."""
    tl = table.timeline
    tl.reload()
    requested = tl.states_of(rollback_ts)[State.REQUESTED]
    assert requested.action == ROLLBACK
    plan = parse_rollback_plan(tl.read_plan(rollback_ts))
    target = plan.instant_to_rollback
    inflight = tl.transition_to_inflight(requested)
    parts: dict[str, RollbackPartitionMetadata] = {}
    deleted = 0
    started = time.monotonic()
    for request in plan.rollback_requests:
        part = parts.setdefault(request.partition_path,
                                RollbackPartitionMetadata(partition_path=request.partition_path))
        for path in request.files_to_be_deleted:
            assert table.storage.delete(relative_path(table, path))
            part.success_delete_files.append(path)
            deleted += 1
        for path, size in request.log_blocks_to_be_deleted.items():
            rel = relative_path(table, path)
            table.storage.append(rel, rollback_command_block(target.commit_time, rollback_ts))
            part.rollback_log_files[path] = table.storage.info(rel).size
            part.log_files_from_failed_commit[path] = size
    undone = tl.get(target.commit_time)
    if undone.action == "compaction" or is_clustering(table, undone):
        tl.revert_to_requested(target.commit_time)
    else:
        tl.delete_pending(target.commit_time)
    table.storage.delete_tree(marker_dir(target.commit_time))
    table.storage.delete(f".hoodie/.heartbeat/{target.commit_time}")
    meta = RollbackMetadata(
        start_rollback_time=rollback_ts, time_taken_in_millis=int((time.monotonic() - started) * 1000),
        total_files_deleted=deleted, commits_rollback=[target.commit_time], partition_metadata=parts,
        instants_rollback=[InstantInfo(commit_time=target.commit_time, action=target.action)])
    tl.complete(inflight, serialize_rollback_metadata(meta))
    return meta
