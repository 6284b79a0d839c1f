"""The snapshot of one file slice: its base file merged with its log files' records and deletes.

Records are folded as Hudi 1.1's record buffer folds them (`fold_winners`), under the table's `MergeRules`:
under commit-time ordering the last write of a key wins; under event-time ordering the write with the
greatest ordering value (several fields compared in order), ties to the later write, and a natural delete (no
ordering value; Hudi writes an Integer 0) wins over whatever came before it in the logs. A data record can be a
delete too (`_hoodie_is_deleted`, a custom delete marker). The fold is done column-wise with pyarrow: only keys
that appear in the logs are merged; other base rows pass through. A slice holding a partial-update block (Hudi 1.1,
header IS_PARTIAL) merges field by field (`partial_merge`, KEEP_VALUES)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HudiError, UnsupportedTableError
from ..fs_view.view import FileSlice
from ..log_format.log_file import BlockType, read_log_file
from ..storage.table_storage import Storage
from ..table.properties import TableConfig
from .base_format import read_base_file, read_base_schema
from .internal_schema import history_rename, history_rename_schema, read_history
from .merge_rules import IS_DELETED, MergeRules, PartialMode, merge_rules
from .partial_merge import (
    HELD,
    fill,
    held_bits,
    keep_values,
    partial_fold,
    require_fillable,
    require_partial_block,
    require_partial_schema,
    require_whole,
)
from .schema import avro_to_arrow, empty_table
from .schema_evolution import evolve_column, project, require_evolvable, slice_schema

KEY = "_hoodie_record_key"
_SEQ, _ORD, _DEL, _BDEL, _RESET, _ROW = "__seq", "__ord", "__del", "__bdel", "__reset", "__row"
BASE_SEQ = -1  # the write position of a base row: before every log block


@dataclass
class LogScan:
    """The valid content of a slice's log files, in write order."""
    data: list[pa.Table]                          # data blocks
    deletes: list[tuple[int, list[tuple[str, str, Any]]]]  # (position in write order, [(key, partition, ordering)])
    positions: list[int]                          # write-order position of each data block
    blocks_read: int = 0
    rollback_blocks: int = 0
    corrupt_blocks: int = 0
    held: dict[int, list[str]] = field(default_factory=dict)  # partial-update blocks (by index in `data`): their fields


def record_keys(t: pa.Table, rules: MergeRules) -> pa.Array:
    """The record key of each row: its `_hoodie_record_key`, or (virtual keys) the key Hudi derives from the record
    key fields (`RecordContext.virtualKeyExtractor`): one field's value as text, several as `field:value` joined
    by commas (`__null__`, `__empty__` for null and empty values). Values of types whose Java text TMS cannot
    reproduce exactly are refused."""
    if not rules.key_fields:
        col = t.column(KEY).cast(pa.string())
        return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    texts = []
    for f in rules.key_fields:
        if f not in t.column_names:
            raise HudiError(f"records lack the record key field {f!r} their virtual keys are derived from")
        typ = t.schema.field(f).type
        if not (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_integer(typ)):
            raise UnsupportedTableError(f"record key field {f} is of type {typ}: TMS derives virtual keys from text "
                                        "and integer fields only (Java's text of other types is not reproduced)")
        texts.append(t.column(f).cast(pa.string()).combine_chunks())
    if len(texts) == 1:
        if texts[0].null_count:
            raise HudiError(f"record key field {rules.key_fields[0]!r} is null in {texts[0].null_count} record(s)")
        return texts[0]
    parts = [pc.binary_join_element_wise(
        f"{f}:", pc.if_else(pc.is_null(v), "__null__", pc.if_else(pc.equal(v, ""), "__empty__", v)), "")
        for f, v in zip(rules.key_fields, texts, strict=True)]
    unset = [pc.or_(pc.is_null(v), pc.equal(v, "")) for v in texts]
    all_unset = unset[0]
    for u in unset[1:]:
        all_unset = pc.and_(all_unset, u)
    if pc.any(all_unset).as_py():
        raise HudiError(f"record key fields {','.join(rules.key_fields)} are all null or empty in some records")
    return pc.binary_join_element_wise(*parts, ",")


def scan_logs(storage: Storage, log_paths: list[str], is_valid_instant: Callable[[str], bool],
              schema: pa.Schema | None = None, rules: MergeRules | None = None) -> LogScan:
    """Read the data and delete blocks of the given log files whose instant is completed (per
    `is_valid_instant`) and not rolled back by a command block. With `schema` (the table's, meta fields
    included), a data block whose schema does not evolve into it is refused before its records are decoded;
    with `rules`, a block whose schema a partial merge cannot merge exactly is refused too."""
    blocks, paths = [], []
    for path in log_paths:
        read = read_log_file(storage.read_bytes(path))
        blocks.extend(read)
        paths.extend([path] * len(read))
    history = read_history(storage) if schema is not None or any(b.is_partial for b in blocks) else {}
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
        if b.is_partial:
            scan.held[len(scan.data)] = partial_block_fields(bool(history), b.schema, rules, what, pos)
        if rules is not None:
            require_partial_schema(b.schema, rules, what)
        if schema is not None and b.schema is not None:
            require_evolvable(history_rename_schema(history, avro_to_arrow(b.schema), instant), schema, what)
        records = b.records()
        if schema is not None:  # columns renamed by schema-on-read evolution take their latest names
            records = history_rename(history, records, instant)
        if schema is not None and b.schema is None:
            require_evolvable(records.schema, schema, what)
        scan.data.append(records)
        scan.positions.append(pos)
    return scan


def partial_block_fields(schema_on_read: bool, avro_schema: dict[str, Any] | None, rules: MergeRules | None,
                         what: str, position: int) -> list[str]:
    """The fields the records of a partial-update block (`what`, at write `position`) hold; refused (one line)
    where TMS cannot merge it as Hudi 1.1 does (`keep_values`, `require_partial_block`), and on schema-on-read
    tables (`schema_on_read`: the table keeps an internal schema history; Hudi's Spark SQL writes no partial
    updates there)."""
    if schema_on_read:
        raise UnsupportedTableError(f"{what} is a partial-update block (IS_PARTIAL) on a schema-on-read table: TMS "
                                    "does not merge those")
    return require_partial_block(avro_schema, keep_values(rules or MergeRules(), what, position), what)


def merge_slice(storage: Storage, config: TableConfig, fs: FileSlice,
                is_valid_instant: Callable[[str], bool], columns: list[str] | None = None,
                schema: pa.Schema | None = None) -> pa.Table:
    """The rows of one file slice. `columns` projects the result (merging still reads what it needs).
    `schema` is the table's latest schema (meta fields included): files and blocks written with older
    schemas are read in it (see `schema_evolution`), or refused before their rows are read."""
    rules = merge_rules(config)
    history = read_history(storage) if schema is not None and fs.base_file else {}
    if schema is not None and fs.base_file:
        require_evolvable(history_rename_schema(history, read_base_schema(storage, fs.base_file.path),
                                                fs.base_file.instant), schema, f"base file {fs.base_file.path}")
    base = read_base_file(storage, fs.base_file.path) if fs.base_file else None
    if base is not None and schema is not None and fs.base_file:
        base = history_rename(history, base, fs.base_file.instant)
    if not fs.log_files:
        if base is None:
            raise HudiError(f"file slice {fs.file_id}@{fs.base_instant} has neither base nor log files")
        if schema is not None:
            base = project(base, slice_schema(base.schema, schema))
        return base.select(columns) if columns else base
    scan = scan_logs(storage, [f.path for f in fs.log_files], is_valid_instant, schema, rules)
    target = None
    if schema is not None:
        first = base.schema if base is not None else (scan.data[0].schema if scan.data else None)
        target = slice_schema(first, schema) if first is not None else schema
    merged = merge_records(base, scan, rules, target)
    return merged.select(columns) if columns else merged


# --- the events of a merge, shared with `bounded_merge` ---------------------------------------------------------

def ord_names(rules: MergeRules) -> list[str]:
    """The control columns holding an event's ordering values, one per ordering field."""
    return [f"{_ORD}{i}" for i in range(len(rules.ordering))]


def ord_types(rules: MergeRules, schema: pa.Schema) -> list[pa.DataType]:
    """The type of each ordering field in the output schema (int64 for a field it lacks: its values are null)."""
    return [schema.field(f).type if f in schema.names else pa.int64() for f in rules.ordering]


def ord_columns(t: pa.Table, rules: MergeRules, types: list[pa.DataType]) -> list[pa.Array]:
    """The ordering values of `t`'s rows, one array per ordering field."""
    out = []
    for f, typ in zip(rules.ordering, types, strict=True):
        if f not in t.column_names:
            out.append(pa.nulls(t.num_rows, typ))
        else:
            col = evolve_column(t.column(f), typ, f)
            out.append(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    return out


def data_deletes(t: pa.Table, rules: MergeRules) -> pa.Array:
    """Which data records are deletes (Hudi's `isDeleteRecord`): `_hoodie_is_deleted` true, or the custom
    delete field holding the marker."""
    flags = pa.repeat(False, t.num_rows)
    if IS_DELETED in t.column_names:
        flags = pc.or_(flags, pc.fill_null(t.column(IS_DELETED).cast(pa.bool_()), False))
    if rules.delete_field and rules.delete_field in t.column_names:
        text = t.column(rules.delete_field).cast(pa.string())
        flags = pc.or_(flags, pc.fill_null(pc.equal(text, rules.delete_marker), False))
    out = flags.combine_chunks() if isinstance(flags, pa.ChunkedArray) else flags
    return out


def data_resets(deletes: pa.Array, ords: list[pa.Array]) -> pa.Array:
    """Which data deletes are commit-time deletes under event-time ordering: Hudi's ordering value of the record
    equals its default, the Integer 0 (`OrderingValues.isDefault`): one int ordering field holding 0. Such a
    delete wins over every earlier write of its key, and every later write wins over it."""
    if len(ords) != 1 or not pa.types.is_int32(ords[0].type):
        return pa.repeat(False, len(deletes))
    return pc.fill_null(pc.and_(deletes, pc.equal(ords[0], 0)), False)


def delete_block_ords(values: list[Any], rules: MergeRules, types: list[pa.DataType],
                      ) -> tuple[list[pa.Array], pa.Array]:
    """The ordering columns of a delete block's deletes and which of them are natural deletes (no ordering
    value, which Hudi writes as an Integer 0): under event-time ordering a natural delete wins over every
    earlier write of its key, and every later write wins over it."""
    natural = [v is None for v in values]
    if len(types) == 1:
        return [_cast_ord(values, types[0])], pa.array(natural, pa.bool_())
    if len(types) > 1:
        # Hudi 1.1 orders such a delete by an array of values, one per ordering field
        wrong = next((v for v in values if v is not None and not (isinstance(v, tuple) and len(v) == len(types))),
                     None)
        if wrong is not None:
            raise UnsupportedTableError(
                f"a delete block orders a delete by {wrong!r} but the table orders by {len(types)} fields "
                f"({', '.join(rules.ordering)}): Hudi cannot compare them")
        return ([_cast_ord([None if v is None else v[i] for v in values], t) for i, t in enumerate(types)],
                pa.array(natural, pa.bool_()))
    return [], pa.array([False] * len(values), pa.bool_())


def fold_winners(ctrl: pa.Table, key: str, ords: list[str], tiebreak: list[str], base_loses: bool = False,
                 ) -> pa.Array:
    """The index (into `ctrl`) of each key's winning event, sorted by key. `ctrl` has the control columns: `key`,
    `__seq` (write position; BASE_SEQ for a base row), the ordering columns `ords` (none: commit-time ordering),
    `__del`, `__bdel` (a delete block's delete), `__reset` (a commit-time delete under event-time ordering), and
    the `tiebreak` columns.

    As Hudi's record buffer folds a key's log writes, then merges the result with the base row: the later write
    wins under commit-time ordering; under event-time ordering the greatest ordering value wins (ties: the later
    write), except around a reset. A reset drops every earlier log write of its key and ignores the delete
    block deletes that follow it; the first later data record supersedes it, whatever the ordering values, and
    then competes with the rest (the base row included) as usual. A reset that is not superseded wins over the
    base row. With `base_loses` the log's winner replaces the base row whatever the ordering values."""
    ctrl = ctrl.append_column("__i", pa.array(np.arange(ctrl.num_rows, dtype=np.int64)))
    if ords:
        resets = ctrl.filter(ctrl.column(_RESET))
        if resets.num_rows:
            last = resets.group_by(key).aggregate([(_SEQ, "max")]).rename_columns([key, "__last_reset"])
            ctrl = ctrl.join(last, key, join_type="left outer")
            seq, last_reset = ctrl.column(_SEQ), ctrl.column("__last_reset")
            after = pc.fill_null(pc.greater(seq, last_reset), False)
            records_after = ctrl.filter(pc.and_(after, pc.invert(ctrl.column(_BDEL))))
            first = records_after.group_by(key).aggregate([(_SEQ, "min")]).rename_columns([key, "__first"])
            ctrl = ctrl.join(first, key, join_type="left outer")
            seq, last_reset, first_record = ctrl.column(_SEQ), ctrl.column("__last_reset"), ctrl.column("__first")
            no_reset = pc.is_null(last_reset)
            # log writes before the key's last reset
            dropped = pc.and_(pc.invert(no_reset), pc.and_(pc.not_equal(seq, BASE_SEQ), pc.less(seq, last_reset)))
            # delete block deletes between the reset and the first data record after it
            ignored = pc.and_(pc.and_(ctrl.column(_BDEL), pc.fill_null(pc.greater(seq, last_reset), False)),
                              pc.fill_null(pc.less(seq, first_record), True))
            superseded = pc.and_(ctrl.column(_RESET), pc.is_valid(first_record))
            out = pc.or_(pc.or_(pc.fill_null(dropped, False), pc.fill_null(ignored, False)),
                         pc.fill_null(superseded, False))
            ctrl = ctrl.filter(pc.invert(out)).drop_columns(["__last_reset", "__first"])
        # A surviving reset is its key's only log write: it wins over the base row whatever the ordering values.
        order = [key, _RESET, *ords, _SEQ, _DEL, *tiebreak]
        if base_loses:
            ctrl = ctrl.append_column("__log", pc.not_equal(ctrl.column(_SEQ), BASE_SEQ))
            order = [key, _RESET, "__log", *ords, _SEQ, _DEL, *tiebreak]
    else:
        order = [key, _SEQ, *tiebreak]
    # Nulls first: a write without an ordering value loses to one with a value.
    ctrl = ctrl.take(pc.sort_indices(ctrl, sort_keys=[(c, "ascending", "at_start") for c in order]))
    keys = ctrl.column(key).combine_chunks()
    n = len(keys)
    if not n:
        return pa.array([], pa.int64())
    is_last = pa.concat_arrays([pc.not_equal(keys.slice(0, n - 1), keys.slice(1)), pa.array([True])])
    return ctrl.filter(is_last).column("__i").combine_chunks()


def merge_records(base: pa.Table | None, scan: LogScan, rules: MergeRules,
                  schema: pa.Schema | None = None) -> pa.Table:
    """The rows of `base` updated by `scan` under `rules`. `schema` is the output schema (compaction writes the
    table's latest schema); by default the base file's, else the first data block's."""
    target_schema = schema or (base.schema if base is not None else (scan.data[0].schema if scan.data else None))
    if target_schema is None:
        return pa.table({KEY: pa.array([], pa.string())})
    if scan.held:
        rules = keep_values(rules, "a partial-update log block", scan.positions[min(scan.held)])
    if rules.partial is not None:
        return _merge_partial(base, scan, rules, target_schema)
    types = ord_types(rules, target_schema)
    names = ord_names(rules)
    ordered = bool(rules.ordering)

    def control(keys: pa.Array | pa.ChunkedArray, seq: int, ords: list[pa.Array], dels: pa.Array,
                resets: pa.Array, rows: pa.Array, block_deletes: bool = False) -> pa.Table:
        n = len(keys)
        return pa.Table.from_arrays(
            [keys.cast(pa.string()), pa.repeat(pa.scalar(seq, pa.int64()), n), *ords, dels,
             pa.repeat(block_deletes, n), resets if ordered else pa.repeat(False, n), rows],
            names=[KEY, _SEQ, *names, _DEL, _BDEL, _RESET, _ROW])

    # Log records in write order; each data row gets its row id in `logs`.
    logs = _concat([_conform(t, target_schema) for t in scan.data], target_schema)
    parts, offset = [], 0
    for t, pos in zip(scan.data, scan.positions, strict=True):
        n = t.num_rows
        ords = ord_columns(t, rules, types)
        dels = data_deletes(t, rules)
        parts.append(control(record_keys(t, rules), pos, ords, dels, data_resets(dels, ords),
                             pa.array(range(offset, offset + n), pa.int64())))
        offset += n
    for pos, dels_ in scan.deletes:
        ords, natural = delete_block_ords([d[2] for d in dels_], rules, types)
        n = len(dels_)
        parts.append(control(pa.array([d[0] for d in dels_], pa.string()), pos, ords, pa.repeat(True, n), natural,
                             pa.repeat(pa.scalar(-1, pa.int64()), n), block_deletes=True))
    if not parts:
        return _concat([base], target_schema) if base is not None else logs
    events = pa.concat_tables(parts)
    log_keys = pc.unique(events.column(KEY))

    if base is not None:
        base_keys = record_keys(base, rules)
        hit = pc.is_in(base_keys, value_set=log_keys)
        hit_idx = pc.indices_nonzero(hit)
        n = len(hit_idx)
        base_hits = control(base_keys.take(hit_idx), BASE_SEQ, ord_columns(base.take(hit_idx), rules, types),
                            pa.repeat(False, n), pa.repeat(False, n), hit_idx.cast(pa.int64()))
        events = pa.concat_tables([base_hits, events])
        untouched = base.filter(pc.invert(hit))
    else:
        untouched = None

    winners = events.take(fold_winners(events, KEY, names, [], rules.base_loses))
    winners = winners.filter(pc.invert(winners.column(_DEL)))
    from_base = pc.equal(winners.column(_SEQ), BASE_SEQ)
    out = []
    if untouched is not None and base is not None:
        out.append(untouched)
        out.append(base.take(winners.filter(from_base).column(_ROW)))
    if logs.num_rows:
        out.append(logs.take(winners.filter(pc.invert(from_base)).column(_ROW)))
    return _concat(out, target_schema)


def _merge_partial(base: pa.Table | None, scan: LogScan, rules: MergeRules, schema: pa.Schema) -> pa.Table:
    """`merge_records` under a partial merge: the log is folded field by field (`partial_fold`), then each key's
    state merges with its base row: the winner of the two (as `fold_winners` decides) takes the other's values in
    its unset fields, unless one of them is a delete."""
    require_fillable(schema, rules)
    types, names = ord_types(rules, schema), ord_names(rules)
    control_names = ["__key", _SEQ, *names, _DEL, _BDEL, _RESET, "__n"]
    keep = rules.partial is PartialMode.KEEP_VALUES
    held_names = [HELD] if keep else []

    def control(keys: pa.Array | pa.ChunkedArray, pos: int, ords: list[pa.Array], dels: pa.Array,
                resets: pa.Array, block_deletes: bool) -> list[pa.Array | pa.ChunkedArray]:
        n = len(keys)
        return [keys.cast(pa.string()), pa.repeat(pa.scalar(pos, pa.int64()), n), *ords, dels,
                pa.repeat(block_deletes, n), resets if rules.ordering else pa.repeat(False, n),
                pa.array(np.arange(n, dtype=np.int64) + (pos << 32))]

    parts = []
    for i, (t, pos) in enumerate(zip(scan.data, scan.positions, strict=True)):
        ords, dels = ord_columns(t, rules, types), data_deletes(t, rules)
        held = [held_bits(schema.names, scan.held.get(i), t.num_rows)] if keep else []
        parts.append(pa.Table.from_arrays(
            [*control(record_keys(t, rules), pos, ords, dels, data_resets(dels, ords), False), *held,
             *_conform(t, schema).columns],
            names=[*control_names, *held_names, *schema.names]))
    for pos, dels_ in scan.deletes:
        ords, natural = delete_block_ords([d[2] for d in dels_], rules, types)
        n = len(dels_)
        held = [held_bits(schema.names, [], n)] if keep else []
        parts.append(pa.Table.from_arrays(
            [*control(pa.array([d[0] for d in dels_], pa.string()), pos, ords, pa.repeat(True, n), natural, True),
             *held, *(pa.nulls(n, f.type) for f in schema)], names=[*control_names, *held_names, *schema.names]))
    if not parts:
        return _concat([base], schema) if base is not None else empty_table(schema)
    state = partial_fold(pa.concat_tables(parts), "__key", "__n", names, rules, schema.names)
    live = pc.invert(state.column(_DEL))
    if base is None:
        if keep:
            require_whole(state.filter(live), "__key", len(schema))
        return _concat([state.filter(live).select(schema.names)], schema)
    base = _conform(base, schema)
    base_keys = record_keys(base, rules)
    hit = pc.is_in(base_keys, value_set=state.column("__key"))
    hit_idx = pc.indices_nonzero(hit)
    n = len(hit_idx)
    base_events = pa.Table.from_arrays(
        [base_keys.take(hit_idx), pa.repeat(pa.scalar(BASE_SEQ, pa.int64()), n),
         *ord_columns(base.take(hit_idx), rules, types), pa.repeat(False, n), pa.repeat(False, n),
         pa.repeat(False, n), hit_idx.cast(pa.int64())], names=control_names)
    log_events = state.select(control_names[:-1]).append_column(
        "__n", pa.array(np.arange(state.num_rows, dtype=np.int64)))
    events = pa.concat_tables([base_events, log_events.cast(base_events.schema)])
    won = events.take(fold_winners(events, "__key", names, [], rules.base_loses))
    # each state key's base row (the last one of the key) and each base key's state
    last_base = pa.table({"__key": base_keys.take(hit_idx), "__row": hit_idx.cast(pa.int64())}).group_by(
        "__key").aggregate([("__row", "max")]).rename_columns(["__key", "__row"])
    state_row = pa.table({"__key": state.column("__key"),
                          "__state": pa.array(np.arange(state.num_rows, dtype=np.int64))})
    won = won.append_column("__w", pa.array(np.arange(won.num_rows, dtype=np.int64))).join(
        last_base, "__key", join_type="left outer").join(state_row, "__key", join_type="left outer").sort_by("__w")
    from_base = pc.equal(won.column(_SEQ), BASE_SEQ)
    out = [base.filter(pc.invert(hit))]
    # the base row won: the state fills its unset fields, unless the state is a delete
    base_won = won.filter(from_base)
    state_of_base = state.take(base_won.column("__state"))
    fillable = pc.invert(state_of_base.column(_DEL))
    rows = base.take(base_won.column("__n"))
    out.append(rows.filter(pc.invert(fillable)))
    out.append(fill(rows.filter(fillable), state_of_base.filter(fillable).select(schema.names), rules, False))
    # the state won: a delete drops the key; else the base row, if any, fills its unset fields
    log_won = won.filter(pc.and_(pc.invert(from_base), pc.invert(won.column(_DEL))))
    won_state = state.take(log_won.column("__state"))
    rows = won_state.select(schema.names)
    in_base = pc.is_valid(log_won.column("__row"))
    if keep:
        require_whole(won_state.filter(pc.invert(in_base)), "__key", len(schema))
    out.append(rows.filter(pc.invert(in_base)))
    out.append(fill(rows.filter(in_base), base.take(log_won.filter(in_base).column("__row")), rules, True,
                    won_state.filter(in_base).column(HELD) if keep else None))
    return _concat(out, schema)


def _cast_ord(values: list[Any], ord_type: pa.DataType) -> pa.Array:
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
        return empty_table(schema)
    return pa.concat_tables([_conform(t, schema) for t in tables])
