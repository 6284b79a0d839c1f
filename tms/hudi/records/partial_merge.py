"""Partial merges: the winning record's unset fields take the values of the records it merged with.

As Hudi 1.1's `EventTimePartialRecordMerger` / `CommitTimePartialRecordMerger` (`PartialUpdateHandler`) fold a
key's log records one at a time: a record that wins (greater or equal ordering value, or any later write under
commit-time ordering) becomes the state, its unset fields filled from the state; a record that loses fills the
state's unset fields; a delete on either side skips the fill (the state restarts at a delete that wins, and a losing
delete or a record losing to a delete is dropped). A field is unset when it holds its default (IGNORE_DEFAULTS:
null) or, for text and bytes fields, the unavailable value (FILL_UNAVAILABLE). The state then merges with the base
row the same way (`fill`).

Hudi 1.1's partial-update log blocks (header IS_PARTIAL, Spark SQL's `MERGE INTO ... UPDATE SET` of some columns)
merge so too, in KEEP_VALUES (`keep_values`): a field is unset when the record's block lacks it (a bitmap of the
fields each record holds rides along, `HELD`), as Spark's `DefaultSparkRecordMerger` / `OverwriteWithLatest
SparkRecordMerger.partialMerge` merge them once the record buffer met such a block (`SparkRecordMergingUtils.
mergePartialRecords`: the winner's fields, the rest from the other record, a delete on either side ends the fill).

Folded column-wise: per key, the records since the last restart form a list (the winners newest first, then the
losers in write order) and each field takes the first set value of the list. A folded state is itself an event: the
fold of (state, later events) is the fold of all events, which lets the bounded merge fold run by run."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedTableError
from .merge_rules import LegacyPartial, MergeRules, PartialMode

META_FIELDS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
               "_hoodie_file_name")
HELD = "__held"  # KEEP_VALUES: which payload fields a record holds, a bit per field (fixed-size binary)


def keep_values(rules: MergeRules, what: str, position: int) -> MergeRules:
    """The rules of a file slice holding a partial-update block (`what`, at write `position`, the first one): Hudi
    1.1's record buffer merges partially from that block on. Refused (one line) where TMS cannot check Java's merge:
    other table versions than 9, and tables with a partial update mode (Hudi then drops that mode's merge)."""
    if rules.partial is PartialMode.KEEP_VALUES:
        return rules if rules.partial_from <= position else replace(rules, partial_from=position)
    if not rules.partial_blocks:
        raise UnsupportedTableError(f"{what} is a partial-update block (IS_PARTIAL): TMS merges those of Hudi 1.1 "
                                    "(table version 9) only")
    if rules.partial is not None:
        raise UnsupportedTableError(f"{what} is a partial-update block (IS_PARTIAL) on a table with partial update "
                                    f"mode {rules.partial}: TMS does not merge the two together")
    return replace(rules, partial=PartialMode.KEEP_VALUES, partial_from=position)


def require_partial_block(avro_schema: dict[str, Any] | None, rules: MergeRules, what: str) -> list[str]:
    """The fields a partial-update block's records hold; refused (one line) if they lack their key or, under
    event-time ordering, an ordering field (Hudi would compare a default ordering value)."""
    if not avro_schema:
        raise UnsupportedTableError(f"{what} is a partial-update block (IS_PARTIAL) without a schema in its header")
    held = [f["name"] for f in avro_schema.get("fields", [])]
    needed = [*(rules.key_fields or ["_hoodie_record_key"]), *rules.ordering]
    missing = [f for f in needed if f not in held]
    if missing:
        raise UnsupportedTableError(f"{what} is a partial-update block (IS_PARTIAL) whose records lack field "
                                    f"{missing[0]}: TMS merges partial updates holding their key and ordering fields")
    return held


def held_bits(names: list[str], held: list[str] | None, n: int) -> pa.Array:
    """`n` bitmaps (`HELD`) of the `names` a record holds: `held` (a partial-update block's fields), or all."""
    bits = np.array([held is None or name in held for name in names], np.bool_)
    return _from_bits(np.broadcast_to(np.packbits(bits, bitorder="little"), (n, (len(names) + 7) // 8)))


def _from_bits(packed: np.ndarray) -> pa.Array:
    n, width = packed.shape
    data = pa.py_buffer(np.ascontiguousarray(packed, np.uint8).tobytes())
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, data])


def _bits(column: pa.Array | pa.ChunkedArray, fields: int) -> np.ndarray:
    """The bitmaps of `HELD` as an (n, fields) bool matrix."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    width, data = col.type.byte_width, col.buffers()[1]
    if data is None:  # no rows, or only the nulls of dropped rows' changes
        return np.zeros((len(col), fields), np.bool_)
    raw = np.frombuffer(data, np.uint8)[col.offset * width:(col.offset + len(col)) * width]
    return np.unpackbits(raw.reshape(len(col), width), axis=1, count=fields, bitorder="little").astype(np.bool_)


def require_whole(rows: pa.Table, key: str, fields: int) -> None:
    """Refuse rows (KEEP_VALUES; `key` names their key column) that lack fields with nothing left to fill them: a
    partial update of a key with neither a base row nor an earlier whole record in its file slice (Hudi's reader
    hands such a record on as it is, which TMS has not checked)."""
    if not rows.num_rows:
        return
    lacking = ~_bits(rows.column(HELD), fields).all(axis=1)
    if lacking.any():
        raise UnsupportedTableError(
            f"the partial update of key {rows.column(key)[int(np.flatnonzero(lacking)[0])]} has neither a base row "
            "nor an earlier whole record in its file slice to fill its other columns: TMS does not merge it")


def require_partial_schema(avro_schema: dict[str, Any] | None, rules: MergeRules, what: str) -> None:
    """Refuse a block whose writer schema gives a top-level field a default other than null under IGNORE_DEFAULTS:
    Hudi compares such a default by Java reference (1.1) or equality (0.15), not something TMS can reproduce."""
    if rules.partial is not PartialMode.IGNORE_DEFAULTS or not avro_schema:
        return
    for f in avro_schema.get("fields", []):
        if "default" in f and f["default"] is not None:
            raise UnsupportedTableError(f"{what} gives field {f['name']} the default {f['default']!r}: TMS merges "
                                        "partial updates (IGNORE_DEFAULTS) of fields whose default is null only")


def require_fillable(schema: pa.Schema, rules: MergeRules) -> None:
    """Refuse bytes columns under FILL_UNAVAILABLE: Hudi compares their text form, which depends on its engine."""
    if rules.partial is not PartialMode.FILL_UNAVAILABLE:
        return
    for f in schema:
        if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type):
            raise UnsupportedTableError(f"column {f.name} holds bytes: TMS fills unavailable values "
                                        "(FILL_UNAVAILABLE) of text columns only")


def unset(column: pa.Array | pa.ChunkedArray, rules: MergeRules) -> np.ndarray:
    """Which values of `column` a merge replaces with the other record's."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if rules.partial is PartialMode.FILL_UNAVAILABLE:
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            return np.zeros(len(col), np.bool_)
        marked = pc.fill_null(pc.equal(col, rules.unavailable_value), False)
        return np.asarray(marked.to_numpy(zero_copy_only=False), np.bool_)
    return np.asarray(col.is_null().to_numpy(zero_copy_only=False), np.bool_)


def _meta_newest_first(rules: MergeRules, name: str) -> bool:
    """Hudi 0.15's PartialUpdateAvroPayload takes the meta fields from the record written last."""
    return rules.legacy_partial is LegacyPartial.PARTIAL_UPDATE and name in META_FIELDS


def fill(primary: pa.Table, secondary: pa.Table, rules: MergeRules, primary_is_log: bool,
         held: pa.Array | pa.ChunkedArray | None = None) -> pa.Table:
    """Row by row, `primary`'s unset fields take `secondary`'s values (both in the same schema). Under KEEP_VALUES
    `held` tells the fields each primary row holds (None: all, as a base row does)."""
    if rules.partial is PartialMode.KEEP_VALUES:
        if held is None:
            return primary
        lacking = ~_bits(held, primary.num_columns)
        return pa.Table.from_arrays([pc.if_else(pa.array(lacking[:, j]), secondary.column(j), primary.column(j))
                                     for j in range(primary.num_columns)], schema=primary.schema)
    columns = []
    for name in primary.column_names:
        first, second = primary.column(name), secondary.column(name)
        if not primary_is_log and _meta_newest_first(rules, name):
            first, second = second, first
        columns.append(pc.if_else(pa.array(unset(first, rules)), second, first))
    return pa.Table.from_arrays(columns, schema=primary.schema)


def _ranks(t: pa.Table, ords: list[str]) -> np.ndarray:
    """The dense rank of each row's ordering values (nulls lowest), 0 without ordering fields."""
    n = t.num_rows
    if not ords or not n:
        return np.zeros(n, np.int64)
    order = pc.sort_indices(t.select(ords), sort_keys=[(c, "ascending", "at_start") for c in ords]).to_numpy()
    differs = np.zeros(n, np.bool_)
    for c in ords:
        col = t.column(c).combine_chunks().take(pa.array(order))
        a, b = col.slice(0, n - 1), col.slice(1)
        both_null = pc.and_(a.is_null(), b.is_null())
        same = pc.or_(pc.fill_null(pc.equal(a, b), False), both_null)
        differs[1:] |= ~same.to_numpy(zero_copy_only=False)
    ranks = np.empty(n, np.int64)
    ranks[order] = np.cumsum(differs)
    return ranks


def partial_fold(events: pa.Table, key: str, arrival: str, ords: list[str], rules: MergeRules,
                 payload: list[str]) -> pa.Table:
    """One event per key (sorted by key): the state Hudi's record buffer holds after folding the key's events in
    `arrival` order. `events` has the control columns of `merge.fold_winners` (`__seq`, the ordering columns,
    `__del`, `__bdel`, `__reset`), `arrival` and the `payload` columns (null for delete block deletes); the state
    has the control columns of the record that won last and the merged payload."""
    n = events.num_rows
    if not n:
        return events
    events = events.take(pc.sort_indices(events, sort_keys=[(key, "ascending"), (arrival, "ascending")]))
    keys = events.column(key).combine_chunks()
    new_key = np.ones(n, np.bool_)
    new_key[1:] = pc.not_equal(keys.slice(0, n - 1), keys.slice(1)).to_numpy(zero_copy_only=False)
    deleted = events.column("__del").combine_chunks().to_numpy(zero_copy_only=False)
    block = events.column("__bdel").combine_chunks().to_numpy(zero_copy_only=False)
    reset = events.column("__reset").combine_chunks().to_numpy(zero_copy_only=False)
    if rules.legacy_partial is LegacyPartial.PARTIAL_UPDATE and bool(np.any(deleted & ~(block & reset))):
        raise UnsupportedTableError(
            "a log record of a PartialUpdateAvroPayload table (version 6) deletes by _hoodie_is_deleted or by a "
            "delete ordered by value: Hudi 0.15 merges those deletes field by field, which TMS does not implement")
    idx = np.arange(n, dtype=np.int64)

    # Segments start at a key's first event and at each natural delete (a reset: it wins whatever came before).
    head = new_key | reset
    seg = np.cumsum(head) - 1
    # Delete block deletes between a reset and the first data record after it are ignored (deltaMergeDeleteRecord).
    seg_starts = np.flatnonzero(head)
    seg_first_data = np.full(len(seg_starts), n, np.int64)
    np.minimum.at(seg_first_data, seg, np.where(~head & ~block, idx, n))
    dropped = block & ~head & reset[seg_starts][seg] & (idx < seg_first_data[seg])

    # A record wins when its ordering value is at least the greatest before it in its segment (ties: the later).
    rank = _ranks(events, ords)
    big = int(rank.max()) + 2
    # A reset (and what is dropped after it) counts as lower than any record: the first record after it wins.
    value = seg * big + np.where(reset | dropped, -1, rank)
    running = np.maximum.accumulate(value)
    before = np.empty(n, np.int64)
    before[0] = -1
    before[1:] = running[:-1]
    wins = head | (~dropped & (value >= before))

    winner_at = np.maximum.accumulate(np.where(wins, idx, -1))  # the state's record at each event
    prev_winner = np.full(n, -1, np.int64)
    prev_winner[1:] = winner_at[:-1]
    prev_winner[new_key] = -1
    after_delete = (prev_winner >= 0) & deleted[np.maximum(prev_winner, 0)]
    restart = wins & (deleted | (prev_winner < 0) | after_delete)
    keep = rules.partial is PartialMode.KEEP_VALUES
    if keep and not ords:
        # OverwriteWithLatestSparkRecordMerger fills a record from the delete before it (its row, or none: a delete
        # block's, on which Hudi 1.1.1 fails); TMS refuses both.
        seq = events.column("__seq").combine_chunks().to_numpy(zero_copy_only=False)
        refused = np.flatnonzero(~deleted & after_delete & (seq >= rules.partial_from))
        if len(refused):
            raise UnsupportedTableError(
                f"key {keys[int(refused[0])]} is written again after a delete in a file slice with partial-update "
                "blocks under commit-time ordering: Hudi 1.1 fills it from the delete; TMS does not merge it")
    last_restart_at = np.maximum.accumulate(np.where(restart, idx, -1))
    ends = np.append(np.flatnonzero(new_key)[1:] - 1, n - 1)
    starts = np.flatnonzero(new_key)
    group = np.cumsum(new_key) - 1
    final = winner_at[ends]                 # the state's record per key
    since = last_restart_at[ends][group]    # the list of each key starts at its last restart
    if rules.legacy_partial is LegacyPartial.OVERWRITE_NON_DEFAULTS:
        listed = idx == final[group]  # Hudi 0.15 folds the log whole (preCombine); only the base row fills it
    else:
        listed = (idx >= since) & ((idx == since) | (~deleted & ~dropped & ~deleted[since]))

    # Priority in the list: the winners newest first, then the losers in write order.
    priority = np.where(wins, -idx, n + idx)
    newest_first = -idx
    state = events.take(pa.array(final))
    columns = {name: state.column(name) for name in state.column_names}
    lidx = np.flatnonzero(listed)
    lgroup = group[lidx]
    bits = _bits(events.column(HELD), len(payload)) if keep else None
    found = np.zeros((len(starts), len(payload)), np.bool_)
    for j, name in enumerate(payload):
        prio = newest_first if _meta_newest_first(rules, name) else priority
        order = lidx[np.lexsort((prio[lidx], lgroup))]
        col = events.column(name).combine_chunks()
        settable = bits[order, j] if bits is not None else ~unset(col.take(pa.array(order)), rules)
        pos = np.where(settable, np.arange(len(order)), len(order))
        group_starts = np.searchsorted(group[order], np.arange(len(starts)))
        first = np.minimum.reduceat(pos, group_starts) if len(order) else np.empty(0, np.int64)
        found[:, j] = first < len(order)
        pick = np.where(found[:, j], order[np.minimum(first, max(len(order) - 1, 0))], final)
        columns[name] = col.take(pa.array(pick))
    if keep:  # the state holds the fields of every record it merged (Spark's merged schema: their union)
        columns[HELD] = _from_bits(np.packbits(found, axis=1, bitorder="little"))
    return pa.table(columns, schema=state.schema)
