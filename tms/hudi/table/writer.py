"""A Hudi writer for demos and tests: insert, upsert and delete into COW and MOR tables, v6 and v8.

It follows the protocol of Hudi's Spark writers: requested -> inflight (with the workload in the
inflight file) -> completed, a heartbeat file while the write runs, a marker for each data file. COW
updates rewrite the file group's base file; MOR updates and deletes go to log files (v6: appended to
the slice's current log file; v8: one new log file per delta commit). Inserts start new file groups.
A write can stop before completing (`leave_inflight`), as a crashed writer does, and be completed later.
Records are keyed within their partition (Hudi's SIMPLE index): a record never moves partitions."""
from __future__ import annotations

import json
import logging
import os
import posixpath
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..context import DEFAULT_CONTEXT, HudiContext
from ..errors import HudiError, InstantConflictError, UnsupportedTableError, UpdateRejectedError
from ..fs_view.file_names import BaseFileName, LogFileName, new_file_id, write_token
from ..fs_view.partition_paths import record_partition_paths
from ..fs_view.view import FileSlice, FileSystemView
from ..locks.transaction import TransactionManager
from ..log_format.log_file import avro_data_block, delete_block, parquet_data_block
from ..metadata.writer import unmaintainable_partitions_for_writes, write_metadata_commit
from ..records.base_format import LANCE, extension_of, table_base_format, write_lance_file
from ..records.merge import KEY, LogScan, merge_records, merge_slice
from ..records.merge_rules import merge_rules
from ..records.schema import META_FIELDS, arrow_to_avro, avro_to_arrow, with_meta_fields
from ..records.schema_evolution import (
    SchemaEvolutionError,
    full_arrow_schema,
    internal_schema_metadata,
    latest_data_schema,
    require_evolvable,
    require_resolvable_history,
)
from ..timeline.conflicts import (
    WriteConflictError,
    clusterings_planned_over,
    find_conflicts,
    rollbacks_of,
    touched_file_groups,
)
from ..timeline.instant import Action, Instant, State
from ..timeline.serde import CommitMetadata, WriteStat, parse_commit_metadata, serialize_commit_metadata
from ..timeline.timeline import Timeline
from .hudi_table import HudiTable
from .properties import MergeMode, TableType, new_table_properties
from .small_files import FileSizing, average_record_size, route_inserts, small_file_capacity

log = logging.getLogger(__name__)

OPERATIONS = ("upsert", "insert", "delete")


@dataclass
class WriteResult:
    instant: str
    action: str
    completed: bool
    stats: list[WriteStat]


class HudiWriter:
    def __init__(self, table: HudiTable, *, callback_url: str | None = None, callback_key: str | None = None,
                 log_block_format: str = "avro", max_file_records: int = 100_000,
                 new_log_file_per_commit: bool = False, transactions: TransactionManager | None = None,
                 allow_updates_to_clustering: bool = False, file_sizing: FileSizing | None = None):
        """`new_log_file_per_commit` (v6): each delta commit writes its blocks to a new log file version
        of the slice instead of appending to the current one, as Java writers do on storage that cannot
        append (object stores). `transactions`: the table's lock and concurrency mode (default: a single
        writer); under multi-writer concurrency control the instant time is generated and the commit is
        checked for conflicts and completed under the lock. `allow_updates_to_clustering`: Hudi's
        SparkAllowUpdateStrategy (update file groups being clustered; the clustering gives way at its commit)
        rather than SparkRejectUpdateStrategy. `file_sizing`: Hudi's small-file options; with a small-file limit
        set, new records go into the partition's small file groups first (see `small_files`)."""
        if log_block_format not in ("avro", "parquet"):
            raise HudiError(f"log block format must be avro or parquet, not {log_block_format!r}")
        self.table = table
        self.config = table.config
        self.callback_url = callback_url
        self.callback_key = callback_key
        self.log_block_format = log_block_format
        self.max_file_records = max_file_records
        self.new_log_file_per_commit = new_log_file_per_commit
        self.transactions = transactions or TransactionManager.single_writer(table)
        self.allow_updates_to_clustering = allow_updates_to_clustering
        self.file_sizing = file_sizing or FileSizing()
        self._table_schema: pa.Schema | None = None  # of the write under way, meta fields included
        self._callbacks: httpx.Client | None = None  # one client (and its connections) for the writer's callbacks
        if self.transactions.config.non_blocking and not (self.config.is_mor
                                                          and self.config.traits.non_blocking_concurrency):
            raise UnsupportedTableError(f"NON_BLOCKING_CONCURRENCY_CONTROL needs a MERGE_ON_READ table of version 8 "
                                        f"or later; {self.config.name} is {self.config.table_type.value} "
                                        f"v{self.config.version}")

    # --- table creation --------------------------------------------------------------------------
    @classmethod
    def create_table(cls, base_path: str, *, table_type: str, version: int, key: list[str],
                     ordering: list[str], partition: list[str], schema: pa.Schema, name: str | None = None,
                     merge_mode: str | None = None, hive_style: bool = True, urlencode: bool = False,
                     partition_time_format: str | None = None, base_file_format: str = "PARQUET",
                     database: str = "default", context: HudiContext = DEFAULT_CONTEXT,
                     **kwargs: Any) -> HudiWriter:
        """A new table (of the catalog database `database`, reached with `context`); `hive_style`, `urlencode`
        and `partition_time_format` shape its partition paths (see `partition_paths`), `base_file_format` is
        PARQUET or LANCE (version 9)."""
        name = name or posixpath.basename(base_path.rstrip("/")) or "table"
        for f in key + ordering + partition:
            if f not in schema.names:
                raise HudiError(f"field {f!r} is not in the records (fields: {', '.join(schema.names)})")
        avro = arrow_to_avro(schema, name)
        props = new_table_properties(name=name, table_type=table_type, version=version, record_key=key,
                                     ordering=ordering, partition=partition, schema_json=json.dumps(avro),
                                     merge_mode=merge_mode, hive_style=hive_style, urlencode=urlencode,
                                     partition_time_format=partition_time_format,
                                     base_file_format=base_file_format, database=database)
        return cls(HudiTable.create(base_path, props, context=context), **kwargs)

    # --- schema and keys -------------------------------------------------------------------------
    def data_avro_schema(self) -> dict[str, Any]:
        """The latest data schema: of the last completed commit, else the table's create schema."""
        schema = latest_data_schema(self.table)
        if schema is None:
            raise HudiError(f"table {self.config.name} has no schema yet (no commit, no create schema)")
        return schema

    def _evolved_schema(self, current: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
        """The Avro schema of records of `schema`, if the table's schema `current` evolves into it."""
        evolved = arrow_to_avro(schema, self.config.name)
        if avro_to_arrow(evolved).equals(avro_to_arrow(current)):
            return current
        for f in self.config.record_key_fields + self.config.ordering_fields + self.config.partition_fields:
            if f not in schema.names:
                raise HudiError(f"field {f!r} is not in the records' schema (fields: {', '.join(schema.names)})")
        if internal_schema_metadata(self.table):
            raise SchemaEvolutionError(
                f"table {self.config.name} uses schema-on-read evolution: TMS's writer does not evolve its internal "
                "schema (new field ids); change the schema with Spark SQL's ALTER TABLE, then write")
        require_evolvable(avro_to_arrow(current), avro_to_arrow(evolved),
                          f"table {self.config.name}: the records' schema")
        require_resolvable_history(self.table, evolved)
        return evolved

    def _record_keys(self, t: pa.Table) -> pa.Array:
        fields = self.config.record_key_fields
        for f in fields:
            if f not in t.column_names:
                raise HudiError(f"records lack the key field {f!r}")
            if t.column(f).null_count:
                raise HudiError(f"key field {f!r} is null in {t.column(f).null_count} record(s)")
        if len(fields) == 1:
            return t.column(fields[0]).cast(pa.string()).combine_chunks()
        cols = [t.column(f).cast(pa.string()).to_pylist() for f in fields]  # ComplexKeyGenerator
        return pa.array([",".join(f"{f}:{v}" for f, v in zip(fields, vals, strict=True))
                         for vals in zip(*cols, strict=True)], pa.string())

    def _partition_paths(self, t: pa.Table) -> pa.Array:
        return record_partition_paths(self.config, t)

    # --- writing ---------------------------------------------------------------------------------
    def write(self, records: list[dict[str, Any]] | pa.Table, op: str = "upsert", *,
              leave_inflight: bool = False, schema: pa.Schema | None = None,
              extra_metadata: dict[str, str] | None = None) -> WriteResult:
        """One commit. `insert` behaves as `upsert` (Hudi's default of merging, not duplicating, keys
        that exist); `delete` takes records holding at least the key and partition fields, and an
        ordering value if an event-time delete should lose to newer writes. `schema` is the records' schema
        when it evolves the table's (columns added, types promoted as Hudi allows): it becomes the table's
        schema from this commit on; a change Hudi's readers cannot resolve is refused before anything is
        written (SchemaEvolutionError). `extra_metadata`: more entries of the commit's extra metadata."""
        if op not in OPERATIONS:
            raise HudiError(f"unknown operation {op!r} (one of {', '.join(OPERATIONS)})")
        stale = unmaintainable_partitions_for_writes(self.table)
        if stale:
            raise UnsupportedTableError(f"table {self.config.name}: the writer cannot keep the metadata table "
                                        f"partition(s) {', '.join(stale)} valid")
        mode = self.config.require_builtin_merge()
        tl = self.table.timeline
        tl.reload()
        avro_schema = self.data_avro_schema()
        if schema is not None:
            avro_schema = self._evolved_schema(avro_schema, schema)
        arrow_schema = avro_to_arrow(avro_schema)
        self._table_schema = full_arrow_schema(avro_schema)
        internal = internal_schema_metadata(self.table)  # kept on schema-on-read tables, as Hudi's writers keep it
        incoming = self._to_arrow(records, arrow_schema, op)
        rules = merge_rules(self.config)
        if rules.partial is not None:
            raise UnsupportedTableError(f"table {self.config.name} merges partial updates ({rules.partial}): "
                                        "TMS's writer does not write to it")
        if rules.key_fields:
            raise UnsupportedTableError(f"table {self.config.name} is MERGE_ON_READ without meta fields (virtual "
                                        "keys): TMS's writer does not write to it")
        if len(rules.ordering) > 1:
            raise UnsupportedTableError(f"table {self.config.name} orders records by several fields "
                                        f"({', '.join(rules.ordering)}): TMS's writer orders by one")
        ordering = rules.ordering[0] if rules.ordering and mode is MergeMode.EVENT_TIME_ORDERING else None
        if op != "delete" and ordering and incoming.column(ordering).null_count:
            raise HudiError(f"ordering field {ordering!r} is null in some records")

        keys, parts = self._record_keys(incoming), self._partition_paths(incoming)
        action = Action.DELTA_COMMIT if self.config.is_mor else Action.COMMIT
        with self.transactions.transaction():  # the instant time is generated under the table's lock
            instant = tl.create_requested(action)
            pending_at_start = [i.timestamp for i in tl.pending() if i.timestamp != instant.timestamp]
        ts = instant.timestamp
        self._heartbeat(ts)
        inflight = tl.transition_to_inflight(instant, serialize_commit_metadata(  # its extra metadata names it
            CommitMetadata(operation_type=op.upper(),
                           extra_metadata={**(extra_metadata or {}), **internal, "schema": json.dumps(avro_schema)}),
            self.config.version))

        view = self.table.file_system_view()
        by_partition: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(parts.to_pylist()):
            by_partition[p].append(i)
        stats: list[WriteStat] = []
        task = 0
        full_schema = with_meta_fields(avro_schema)
        record_size = average_record_size(tl, self.file_sizing) if self.file_sizing.routes and op != "delete" else 0
        for partition, idx in sorted(by_partition.items()):
            batch = incoming.take(pa.array(idx))
            batch_keys = keys.take(pa.array(idx))
            batch = _dedupe(batch, batch_keys, ordering)
            batch_keys = self._record_keys(batch)
            self._ensure_partition(partition, ts)
            located = self._locate(view, partition, batch_keys)
            for fid in located:
                if self.allow_updates_to_clustering:
                    break
                if fid in {f for (p, f) in view.pending_clustering if p == partition}:
                    raise UpdateRejectedError(f"file group {fid} in {partition or '(root)'} is being clustered "
                                    f"(instant {view.pending_clustering[(partition, fid)]}); updates are rejected")
            if record_size and located.get(None):
                capacity = small_file_capacity(view, partition, self.file_sizing, record_size,
                                               merge_on_read=self.config.is_mor)
                routed, located[None] = route_inserts(located[None], capacity)
                for fid, positions in routed.items():
                    located[fid] = located.get(fid, []) + positions
                if not located[None]:
                    del located[None]
            for fid, positions in sorted(located.items(), key=lambda kv: kv[0] or ""):
                self._heartbeat(ts)  # a long write keeps its heartbeat fresh
                rows = batch.take(pa.array(positions))
                if fid is None:
                    if op == "delete":
                        continue  # deleting keys that do not exist changes nothing
                    for start in range(0, rows.num_rows, self.max_file_records):
                        chunk = rows.slice(start, self.max_file_records)
                        stats.append(self._new_file_group(ts, partition, chunk, full_schema, task))
                        task += 1
                    continue
                fs = self._latest_slice(view, partition, fid)
                if self.config.is_mor:
                    stats.append(self._append_log(ts, fs, rows, op, ordering, full_schema, task))
                else:
                    stats.append(self._rewrite_base(ts, view, fs, rows, op, ordering, full_schema, task))
                task += 1

        meta = CommitMetadata(partition_to_write_stats=_group_stats(stats), compacted=False,
                              extra_metadata={**(extra_metadata or {}), **internal, "schema": json.dumps(avro_schema)},
                              operation_type=op.upper())
        self.table.storage.write_atomic(tl.path_of(inflight), serialize_commit_metadata(meta, self.config.version),
                                        overwrite=True)
        if leave_inflight:
            # A writer that crashes here has already synced its metadata table, as Java's does before it completes.
            write_metadata_commit(self.table, ts, action, meta)
            return WriteResult(ts, action, False, stats)
        self._finish(inflight, meta, pending_at_start)
        return WriteResult(ts, action, True, stats)

    def complete(self, timestamp: str) -> WriteResult:
        """Complete a write that was left inflight (its files and workload are in place)."""
        tl = self.table.timeline
        tl.reload()
        states = tl.states_of(timestamp)
        if not states:
            raise HudiError(f"no instant {timestamp} on the timeline of {self.config.name}")
        if State.COMPLETED in states:
            raise HudiError(f"instant {timestamp} is already completed")
        inflight = states.get(State.INFLIGHT)
        if inflight is None or inflight.action not in (Action.COMMIT, Action.DELTA_COMMIT):
            raise HudiError(f"instant {timestamp} is not an inflight write")
        meta = parse_commit_metadata(tl.read(inflight))
        self._heartbeat(timestamp)
        self._finish(inflight, meta)
        return WriteResult(timestamp, inflight.action, True, meta.write_stats())

    def _finish(self, inflight: Instant, meta: CommitMetadata, pending_at_start: Sequence[str] = ()) -> None:
        with self.transactions.transaction() as tl:
            self._check_conflicts(tl, inflight, meta, pending_at_start)
            write_metadata_commit(self.table, inflight.timestamp, inflight.action, meta)  # the MDT first, as Java
            tl.complete(inflight, serialize_commit_metadata(meta, self.config.version))
        self.table.storage.delete_tree(f".hoodie/.temp/{inflight.timestamp}")
        self.table.storage.delete(f".hoodie/.heartbeat/{inflight.timestamp}")
        if self.callback_url:
            self._post_callback(self.callback_url, inflight.timestamp, inflight.action, meta)

    def _check_conflicts(self, tl: Timeline, inflight: Instant, meta: CommitMetadata,
                         pending_at_start: Sequence[str]) -> None:
        """A write whose rollback is planned never completes. Under multi-writer concurrency control (OCC, NBCC),
        this write fails if an operation that completed after it started touched its file groups (under NBCC,
        other writers' delta commits never conflict), or, rejecting updates to clustered file groups, if a
        clustering was planned over them meanwhile. A failed write stays inflight (its heartbeat stops) until
        it is rolled back, as in Hudi."""
        rollbacks = rollbacks_of(tl, inflight.timestamp)
        if rollbacks:
            raise InstantConflictError(f"{inflight.action} {inflight.timestamp} is being rolled back (rollback "
                                       f"{rollbacks[0].timestamp}: its heartbeat expired); it cannot complete")
        concurrency = self.transactions.config
        if not concurrency.multi_writer:
            return
        mine = touched_file_groups(meta)
        nbcc = concurrency.non_blocking and self.config.is_mor
        conflicts = find_conflicts(tl, inflight.timestamp, mine, pending_at_start=pending_at_start,
                                   counts=lambda i, m: not (nbcc and i.action == Action.DELTA_COMMIT))
        if not self.allow_updates_to_clustering:
            conflicts += clusterings_planned_over(tl, inflight.timestamp, mine)
        if conflicts:
            raise WriteConflictError(inflight.action, inflight.timestamp, conflicts,
                                     "this write failed and stays inflight until it is rolled back")

    # --- pieces ----------------------------------------------------------------------------------
    def _to_arrow(self, records: list[dict[str, Any]] | pa.Table, schema: pa.Schema, op: str) -> pa.Table:
        if isinstance(records, pa.Table):
            t = records
        else:
            if not records:
                raise HudiError("no records to write")
            names = set(schema.names)
            for n, rec in enumerate(records, 1):
                unknown = set(rec) - names
                if unknown:
                    raise HudiError(f"record {n} has fields not in the table schema: {', '.join(sorted(unknown))}")
            try:
                if op == "delete":  # deletes may carry just the key fields
                    present = [f for f in schema if any(f.name in r for r in records)]
                    t = pa.Table.from_pylist(records, schema=pa.schema(present))
                else:
                    t = pa.Table.from_pylist(records, schema=schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
                raise HudiError(f"records do not match the table schema: {e}") from None
        if t.num_rows == 0:
            raise HudiError("no records to write")
        if op != "delete":
            missing = [f.name for f in schema if f.name not in t.column_names]
            if missing:
                raise HudiError(f"records lack fields of the table schema: {', '.join(missing)}")
            t = t.select(schema.names)
        return t

    def _locate(self, view: FileSystemView, partition: str, keys: pa.Array) -> dict[str | None, list[int]]:
        """Positions of the batch's keys by the file group holding them (None: new keys)."""
        where: dict[str, str] = {}
        for fs in view.merged_latest_slices():
            if fs.partition != partition:
                continue
            existing = merge_slice(self.table.storage, self.config, fs, view.is_completed, [KEY], self._table_schema)
            hit = pc.is_in(existing.column(KEY), value_set=keys)
            for k in existing.column(KEY).filter(hit).to_pylist():
                where[k] = fs.file_id
        out: dict[str | None, list[int]] = defaultdict(list)
        for i, k in enumerate(keys.to_pylist()):
            out[where.get(k)].append(i)
        return out

    def _latest_slice(self, view: FileSystemView, partition: str, fid: str) -> FileSlice:
        group = next(g for g in view.file_groups(partition) if g.file_id == fid)
        fs = group.latest_slice
        if fs is None:  # cannot be: _locate found the key in one of the group's slices
            raise HudiError(f"file group {fid} of partition {partition!r} has no slice")
        return fs

    def _with_meta(self, rows: pa.Table, ts: str, partition: str, file_name: str, task: int) -> pa.Table:
        n = rows.num_rows
        meta = {
            "_hoodie_commit_time": pa.array([ts] * n, pa.string()),
            "_hoodie_commit_seqno": pa.array([f"{ts}_{task}_{i}" for i in range(n)], pa.string()),
            "_hoodie_record_key": self._record_keys(rows),
            "_hoodie_partition_path": pa.array([partition] * n, pa.string()),
            "_hoodie_file_name": pa.array([file_name] * n, pa.string()),
        }
        data = [rows.column(c) for c in rows.column_names if c not in META_FIELDS]
        return pa.Table.from_arrays(list(meta.values()) + data, names=list(meta) + [c for c in rows.column_names
                                                                                    if c not in META_FIELDS])

    def _marker(self, ts: str, rel_path: str, kind: str) -> None:
        # an empty file, made whether or not it exists (a retried task's marker), as Hudi's direct markers are
        self.table.storage.touch(f".hoodie/.temp/{ts}/{rel_path}.marker.{kind}")

    def _heartbeat(self, ts: str) -> None:
        self.table.storage.touch(f".hoodie/.heartbeat/{ts}")

    def _ensure_partition(self, partition: str, ts: str) -> None:
        rel = posixpath.join(partition, ".hoodie_partition_metadata") if partition else ".hoodie_partition_metadata"
        if not self.table.storage.exists(rel):
            depth = partition.count("/") + 1 if partition else 0  # folder levels, as Java counts them
            text = f"#partition metadata\ncommitTime={ts}\npartitionDepth={depth}\n"
            try:
                self.table.storage.write_atomic(rel, text.encode())
            except HudiError:
                pass  # written by a concurrent writer

    def _base_file_name(self, fid: str, task: int, ts: str) -> str:
        return str(BaseFileName(fid, write_token(task), ts, extension_of(table_base_format(self.config))))

    def _write_parquet(self, rel: str, t: pa.Table, full_schema: dict[str, Any]) -> int:
        """A base file in the table's format (Parquet, or Lance on a Lance table)."""
        keys = t.column(KEY)
        md = {b"parquet.avro.schema": json.dumps(full_schema).encode(), b"writer.model.name": b"avro"}
        if t.num_rows:
            md[b"hoodie_min_record_key"] = pc.min(keys).as_py().encode()
            md[b"hoodie_max_record_key"] = pc.max(keys).as_py().encode()
        if table_base_format(self.config) == LANCE:
            write_lance_file(self.table.storage, rel, t, {k: v for k, v in md.items() if k.startswith(b"hoodie_")})
            return self.table.storage.info(rel).size
        t = t.replace_schema_metadata(md)
        with self.table.storage.open(rel, "wb") as fh:
            pq.write_table(t, fh, compression="snappy")
        return self.table.storage.info(rel).size

    def _new_file_group(self, ts: str, partition: str, rows: pa.Table, full_schema: dict[str, Any],
                        task: int) -> WriteStat:
        fid = new_file_id()
        name = self._base_file_name(fid, task, ts)
        rel = posixpath.join(partition, name) if partition else name
        self._marker(ts, rel, "CREATE")
        size = self._write_parquet(rel, self._with_meta(rows, ts, partition, name, task), full_schema)
        return WriteStat(file_id=fid, path=rel, prev_commit="null", num_writes=rows.num_rows, num_inserts=rows.num_rows,
                         total_write_bytes=size, file_size_in_bytes=size, partition_path=partition)

    def _rewrite_base(self, ts: str, view: FileSystemView, fs: FileSlice, rows: pa.Table, op: str,
                      ordering: str | None, full_schema: dict[str, Any], task: int) -> WriteStat:
        """COW update: merge the incoming rows into the file group's rows and write a new base file."""
        current = merge_slice(self.table.storage, self.config, fs, view.is_completed, schema=self._table_schema)
        name = self._base_file_name(fs.file_id, task, ts)
        rel = posixpath.join(fs.partition, name) if fs.partition else name
        scan = self._as_log_scan(rows, op, ordering, ts, fs.partition, name, task)
        merged = merge_records(current, scan, merge_rules(self.config))
        merged = merged.set_column(merged.schema.get_field_index("_hoodie_file_name"), "_hoodie_file_name",
                                   pa.array([name] * merged.num_rows, pa.string()))
        self._marker(ts, rel, "MERGE")
        size = self._write_parquet(rel, merged, full_schema)
        updated = rows.num_rows if op != "delete" else 0
        deleted = current.num_rows - merged.num_rows if op == "delete" else 0
        return WriteStat(file_id=fs.file_id, path=rel, prev_commit=fs.base_instant, num_writes=merged.num_rows,
                         num_update_writes=updated, num_deletes=deleted, total_write_bytes=size,
                         file_size_in_bytes=size, partition_path=fs.partition)

    def _as_log_scan(self, rows: pa.Table, op: str, ordering: str | None, ts: str, partition: str, file_name: str,
                     task: int) -> LogScan:
        if op == "delete":
            return LogScan([], [(0, self._delete_keys(rows, ordering, partition))], [])
        return LogScan([self._with_meta(rows, ts, partition, file_name, task)], [], [0])

    def _delete_keys(self, rows: pa.Table, ordering: str | None, partition: str) -> list[tuple[str, str, Any]]:
        keys = self._record_keys(rows).to_pylist()
        ords = rows.column(ordering).to_pylist() if ordering and ordering in rows.column_names else [None] * len(keys)
        return list(zip(keys, [partition] * len(keys), ords, strict=True))  # None: delete whatever the ordering

    def _append_log(self, ts: str, fs: FileSlice, rows: pa.Table, op: str, ordering: str | None,
                    full_schema: dict[str, Any], task: int) -> WriteStat:
        """MOR update or delete: one block in the slice's log (v6 appends to its current log file where the
        storage can append)."""
        storage = self.table.storage
        if op == "delete":
            ord_type = "int"  # Hudi's orderingVal for tables without event-time ordering
            if ordering:
                ord_type = next(f["type"] for f in full_schema["fields"] if f["name"] == ordering)
            block = delete_block(self._delete_keys(rows, ordering, fs.partition), ts, ord_type, full_schema)
            records = 0
        else:
            data = self._with_meta(rows, ts, fs.partition, fs.file_id, task)
            make = parquet_data_block if self.log_block_format == "parquet" else avro_data_block
            block = make(data, full_schema, ts)
            records = rows.num_rows
        if self.config.traits.log_files_named_by_writer:
            name = LogFileName(fs.file_id, ts, 1, write_token(task))
            offset = 0
        else:
            own = [f for f in fs.log_files if f.name.instant == fs.base_instant]
            latest = max(own, key=lambda f: f.name.sort_key).name if own else None
            # Where the storage cannot append (an object store), the block starts the next log version,
            # as Hudi does on storage without append.
            if latest is None or self.new_log_file_per_commit or not storage.appends:
                name = LogFileName(fs.file_id, fs.base_instant, latest.version + 1 if latest else 1, write_token(task))
                offset = 0
            else:
                name = latest
                offset = storage.info(_rel(fs.partition, str(name))).size
        rel = _rel(fs.partition, str(name))
        self._marker(ts, rel, "APPEND")
        if offset:
            storage.append(rel, block)
        else:
            storage.write_new(rel, block)
        return WriteStat(file_id=fs.file_id, path=rel, prev_commit=fs.base_instant, num_writes=records,
                         num_update_writes=records, num_deletes=rows.num_rows if op == "delete" else 0,
                         total_write_bytes=len(block), file_size_in_bytes=offset + len(block),
                         partition_path=fs.partition, total_log_blocks=1, log_version=name.version,
                         log_offset=offset, base_file=fs.base_file.file_name if fs.base_file else "",
                         log_files=[str(name)])

    def _post_callback(self, url: str, ts: str, action: str, meta: CommitMetadata) -> None:
        """Hudi's HTTP commit callback (HoodieWriteCommitCallbackMessage as JSON)."""
        body = {"commitTime": ts, "tableName": self.config.name, "basePath": callback_base_path(self.table.base_path),
                "hoodieWriteStat": [s.to_jackson() for s in meta.write_stats()],
                "commitActionType": action, "extraMetadata": meta.extra_metadata}
        headers = {"HUDI-CALLBACK-KEY": self.callback_key} if self.callback_key else {}
        try:
            if self._callbacks is None:
                self._callbacks = httpx.Client(timeout=10)
            response = self._callbacks.post(url, json=body, headers=headers)
        except httpx.HTTPError as e:  # as in Hudi, a failed callback does not fail the commit
            log.warning("commit callback to %s failed: %s", url, e)
            return
        if response.is_error:
            log.warning("commit callback for %s refused by %s (%s): %s", ts, url,
                        response.status_code, refusal_reason(response))


def callback_base_path(base_path: str) -> str:
    """The table's base path as a service must see it: a local path absolute (a relative one means
    nothing to the service), a URL as it is."""
    return base_path if "://" in base_path else os.path.abspath(base_path)


def refusal_reason(response: httpx.Response) -> str:
    """The reason a service gave for refusing a request: its JSON `detail`, else the start of its body."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return " ".join(str(detail if detail else response.text[:200] or response.reason_phrase).split())


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def _dedupe(batch: pa.Table, keys: pa.Array, ordering: str | None) -> pa.Table:
    """One record per key: the greatest ordering value (ties: the later record), else the last."""
    if len(pc.unique(keys)) == len(keys):
        return batch
    idx = pa.array(range(batch.num_rows), pa.int64())
    t = pa.table({"k": keys, "i": idx, "o": batch.column(ordering) if ordering and ordering in batch.column_names
                  else idx})
    t = t.take(pc.sort_indices(t, [("k", "ascending"), ("o", "ascending"), ("i", "ascending")]))
    k = t.column("k").combine_chunks()
    last = pa.concat_arrays([pc.not_equal(k.slice(0, len(k) - 1), k.slice(1)), pa.array([True])])
    keep = pc.sort_indices(t.filter(last).column("i"))
    return batch.take(t.filter(last).column("i").take(keep))


def _group_stats(stats: list[WriteStat]) -> dict[str, list[WriteStat]]:
    out: dict[str, list[WriteStat]] = defaultdict(list)
    for s in stats:
        out[s.partition_path or ""].append(s)  # the writer sets it on every stat
    return dict(out)


def records_schema(table_schema: pa.Schema, records: list[dict[str, Any]]) -> pa.Schema:
    """The schema of records that may evolve the table's (as the schema of a DataFrame written to Hudi does):
    a column keeps the table's type if every value fits it, else takes the type inferred from the values;
    fields the table lacks are added (nullable), in the order the records first hold them."""
    inferred = pa.Table.from_pylist(records).schema
    fields = []
    for f in table_schema:
        values = [r.get(f.name) for r in records]
        try:  # fits: converts, and back to the same values (pyarrow would truncate 0.5 into a long column)
            fits = pa.array(values, f.type).to_pylist() == values
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            fits = False
        fields.append(f if fits or f.name not in inferred.names else inferred.field(f.name))
    added = [inferred.field(n) for n in inferred.names if n not in table_schema.names]
    return pa.schema(fields + added)


def create_table_for_records(base_path: str, records: list[dict[str, Any]], *, table_type: str | TableType,
                             version: int, key: list[str], ordering: list[str], partition: list[str],
                             **kwargs: Any) -> HudiWriter:
    """Create a table whose schema is inferred from the first records."""
    if not records:
        raise HudiError("cannot infer a schema from no records")
    schema = pa.Table.from_pylist(records).schema
    return HudiWriter.create_table(base_path, table_type=TableType(table_type).value, version=version, key=key,
                                   ordering=ordering, partition=partition, schema=schema, **kwargs)
