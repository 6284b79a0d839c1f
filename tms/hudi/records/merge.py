"""The snapshot of one file slice: its base file merged with its log files' records and deletes.

Records are folded in write order. Under COMMIT_TIME_ORDERING the last write of a key wins. Under
EVENT_TIME_ORDERING the write with the greatest ordering value wins (ties: the later write), and a
delete without an ordering value (Hudi writes 0) deletes whatever came before it. The fold is done
column-wise with pyarrow: only keys that appear in the logs are merged; other base rows pass through."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HudiError
from ..fs_view.view import FileSlice
from ..log_format.log_file import BlockType, read_log_file
from ..storage.table_storage import Storage
from ..table.properties import MergeMode, TableConfig
from .base_format import read_base_file, read_base_schema
from .schema import avro_to_arrow
from .schema_evolution import evolve_column, project, require_evolvable, slice_schema

KEY = "_hoodie_record_key"
_SEQ, _ORD, _DEL, _RESET, _ROW = "__seq", "__ord", "__del", "__reset", "__row"


@dataclass
class LogScan:
    """The valid content of a slice's log files, in write order."""
    data: list[pa.Table]                          # data blocks
    deletes: list[tuple[int, list[tuple[str, str, Any]]]]  # (position in write order, [(key, partition, ordering)])
    positions: list[int]                          # write-order position of each data block
    blocks_read: int = 0
    rollback_blocks: int = 0
    corrupt_blocks: int = 0


def scan_logs(storage: Storage, log_paths: list[str], is_valid_instant: Callable[[str], bool],
              schema: pa.Schema | None = None) -> LogScan:
    """Read the data and delete blocks of the given log files whose instant is completed (per
    `is_valid_instant`) and not rolled back by a command block. With `schema` (the table's, meta fields
    included), a data block whose schema does not evolve into it is refused before its records are decoded."""
    blocks, paths = [], []
    for path in log_paths:
        read = read_log_file(storage.read_bytes(path))
        blocks.extend(read)
        paths.extend([path] * len(read))
    rolled_back = set()
    corrupt = 0
    for b in blocks:
        if b.block_type is BlockType.COMMAND and b.is_rollback:
            rolled_back.add(b.target_instant_time)
        elif b.block_type is BlockType.CORRUPT:
            corrupt += 1
    scan = LogScan([], [], [], len(blocks), len(rolled_back), corrupt)
    for pos, b in enumerate(blocks):
        if b.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.DELETE):
            continue
        instant = b.instant_time
        if instant is None or instant in rolled_back or not is_valid_instant(instant):
            continue
        if b.block_type is BlockType.DELETE:
            scan.deletes.append((pos, b.deleted_keys()))
            continue
        what = f"the log block of instant {instant} in {paths[pos]}"
        if schema is not None and b.schema is not None:
            require_evolvable(avro_to_arrow(b.schema), schema, what)
        records = b.records()
        if schema is not None and b.schema is None:
            require_evolvable(records.schema, schema, what)
        scan.data.append(records)
        scan.positions.append(pos)
    return scan


def merge_ordering_field(config: TableConfig) -> str | None:
    """The field whose greatest value wins under the table's merge mode; None under commit-time ordering.
    Raises UnsupportedTableError for CUSTOM merge mode."""
    if config.require_builtin_merge() is not MergeMode.EVENT_TIME_ORDERING:
        return None
    fields = config.ordering_fields
    return fields[0] if fields else None


def merge_slice(storage: Storage, config: TableConfig, fs: FileSlice,
                is_valid_instant: Callable[[str], bool], columns: list[str] | None = None,
                schema: pa.Schema | None = None) -> pa.Table:
    """The rows of one file slice. `columns` projects the result (merging still reads what it needs).
    `schema` is the table's latest schema (meta fields included): files and blocks written with older
    schemas are read in it (see `schema_evolution`), or refused before their rows are read."""
    ordering = merge_ordering_field(config)
    if schema is not None and fs.base_file:
        require_evolvable(read_base_schema(storage, fs.base_file.path), schema, f"base file {fs.base_file.path}")
    base = read_base_file(storage, fs.base_file.path) if fs.base_file else None
    if not fs.log_files:
        if base is None:
            raise HudiError(f"file slice {fs.file_id}@{fs.base_instant} has neither base nor log files")
        if schema is not None:
            base = project(base, slice_schema(base.schema, schema))
        return base.select(columns) if columns else base
    scan = scan_logs(storage, [f.path for f in fs.log_files], is_valid_instant, schema)
    target = None
    if schema is not None:
        first = base.schema if base is not None else (scan.data[0].schema if scan.data else None)
        target = slice_schema(first, schema) if first is not None else schema
    merged = merge_records(base, scan, ordering, target)
    return merged.select(columns) if columns else merged


def merge_records(base: pa.Table | None, scan: LogScan, ordering: str | None,
                  schema: pa.Schema | None = None) -> pa.Table:
    """The rows of `base` updated by `scan`. `schema` is the output schema (compaction writes the table's
    latest schema); by default the base file's, else the first data block's."""
    target_schema = schema or (base.schema if base is not None else (scan.data[0].schema if scan.data else None))
    if target_schema is None:
        return pa.table({KEY: pa.array([], pa.string())})
    ord_type = target_schema.field(ordering).type if ordering and ordering in target_schema.names else None

    # Log records in write order; each data row gets its row id in `logs`.
    logs = _concat([_conform(t, target_schema) for t in scan.data], target_schema)
    parts, offset = [], 0
    for t, pos in zip(scan.data, scan.positions, strict=True):
        n = t.num_rows
        parts.append(pa.table({
            KEY: t.column(KEY).cast(pa.string()),
            _SEQ: pa.array([pos] * n, pa.int64()),
            _ORD: _ord_column(t, ordering, ord_type),
            _DEL: pa.array([False] * n, pa.bool_()),
            _RESET: pa.array([False] * n, pa.bool_()),
            _ROW: pa.array(range(offset, offset + n), pa.int64()),
        }))
        offset += n
    for pos, dels in scan.deletes:
        keys = [d[0] for d in dels]
        ords = [d[2] for d in dels]
        natural = [o is None or o == 0 for o in ords]
        parts.append(pa.table({
            KEY: pa.array(keys, pa.string()),
            _SEQ: pa.array([pos] * len(keys), pa.int64()),
            _ORD: _cast_ord(ords, ord_type),
            _DEL: pa.array([True] * len(keys), pa.bool_()),
            # Only event-time ordering lets an older write survive a later one; a natural delete
            # (no ordering value) resets the key there.
            _RESET: pa.array(natural if ordering else [False] * len(keys), pa.bool_()),
            _ROW: pa.array([-1] * len(keys), pa.int64()),
        }))
    if not parts:
        return _concat([base], target_schema) if base is not None else logs
    events = pa.concat_tables(parts)
    log_keys = pc.unique(events.column(KEY))

    if base is not None:
        base_keys = base.column(KEY).cast(pa.string())
        hit = pc.is_in(base_keys, value_set=log_keys)
        hit_idx = pc.indices_nonzero(hit)
        base_hits = pa.table({
            KEY: base_keys.take(hit_idx),
            _SEQ: pa.array([-1] * len(hit_idx), pa.int64()),
            _ORD: _ord_column(base.take(hit_idx), ordering, ord_type),
            _DEL: pa.array([False] * len(hit_idx), pa.bool_()),
            _RESET: pa.array([False] * len(hit_idx), pa.bool_()),
            _ROW: hit_idx.cast(pa.int64()),
        })
        events = pa.concat_tables([base_hits, events])
        untouched = base.filter(pc.invert(hit))
    else:
        untouched = None

    if ordering:
        resets = events.filter(events.column(_RESET))
        if resets.num_rows:
            last_reset = resets.group_by(KEY).aggregate([(_SEQ, "max")]).rename_columns([KEY, "__last_reset"])
            events = events.join(last_reset, KEY, join_type="left outer")
            lr = pc.fill_null(events.column("__last_reset"), -2)
            events = events.filter(pc.greater_equal(events.column(_SEQ), lr)).drop_columns(["__last_reset"])
        order = [KEY, _ORD, _SEQ, _DEL]
    else:
        order = [KEY, _SEQ]
    # Nulls first: a write without an ordering value loses to one with a value.
    events = events.take(pc.sort_indices(events, sort_keys=[(c, "ascending", "at_start") for c in order]))
    # After sorting, the winner of each key is its last row.
    keys = events.column(KEY).combine_chunks()
    n = len(keys)
    is_last = pa.concat_arrays([pc.not_equal(keys.slice(0, n - 1), keys.slice(1)), pa.array([True])]) if n else keys
    winners = events.filter(is_last) if n else events
    winners = winners.filter(pc.invert(winners.column(_DEL)))
    from_base = pc.equal(winners.column(_SEQ), -1)
    out = []
    if untouched is not None and base is not None:
        out.append(untouched)
        out.append(base.take(winners.filter(from_base).column(_ROW)))
    if logs.num_rows:
        out.append(logs.take(winners.filter(pc.invert(from_base)).column(_ROW)))
    return _concat(out, target_schema)


def _ord_column(t: pa.Table, ordering: str | None, ord_type: pa.DataType | None) -> pa.Array:
    if not ordering or ord_type is None or ordering not in t.column_names:
        return pa.nulls(t.num_rows, ord_type or pa.int64())
    return evolve_column(t.column(ordering), ord_type, ordering).combine_chunks()


def _cast_ord(values: list[Any], ord_type: pa.DataType | None) -> pa.Array:
    if ord_type is None:
        return pa.nulls(len(values), pa.int64())
    try:
        return pa.array(values).cast(ord_type) if values else pa.array([], ord_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else v for v in values], ord_type)


def _conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows in the output schema (columns missing from old files and blocks are null, older types evolve)."""
    return project(t, schema)


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    tables = [t for t in tables if t is not None]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([_conform(t, schema) for t in tables])
