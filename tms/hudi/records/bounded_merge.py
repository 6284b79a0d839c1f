"""Merging one file slice within a fixed memory budget, as Hudi's compaction does with its spillable map.

The rows are those of `merge.merge_records` (the same fold, `merge.fold_winners`, under the same `MergeRules`;
the latest schema), computed without holding the slice in memory:

1. The log files are read block by block. Their records become events (key, write position, ordering value,
   delete flag, payload) in a buffer; a buffer past a quarter of the budget is folded to one event per key
   (the fold is associative: a folded run is itself a list of events) until the logs are known not to fit;
   from then on buffers are hash-partitioned by key, unfolded, into buckets on local disk (Arrow IPC files,
   uncompressed: written and read back at memory speed, in the same types, so the spill changes no value).
2. The base file's key and ordering columns are streamed; with spilled buckets they are partitioned the same
   way. Each bucket (its log events and base keys, sized to fit the budget) is folded to its winners: per
   base row a change (replaced by a log record, or dropped), and the log records of keys the base lacks.
3. The base file is streamed by row group (`ParquetFile.iter_batches`); each batch gets its changes (the
   buckets' changes are sorted by row, read through one cursor per bucket) and goes to the sink as it is
   merged; the inserts follow. Updated rows keep their place, as Hudi's merge handle writes them.

Arrow IPC runs were chosen over a key-value store (sqlite, lmdb): every step stays columnar and vectorised
(pyarrow sorts, joins and takes), and a hash partition needs only sequential writes and reads."""
from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import HudiError
from ..fs_view.file_names import BaseFileName
from ..log_format.log_file import BlockType, LogBlock, read_log_file
from ..storage.table_storage import Storage
from .internal_schema import history_rename, history_rename_schema, read_history
from .merge import (
    BASE_SEQ,
    KEY,
    data_deletes,
    data_resets,
    delete_block_ords,
    fold_winners,
    ord_columns,
    ord_names,
    ord_types,
    partial_block_fields,
    record_keys,
)
from .merge_rules import MergeRules, PartialMode
from .partial_merge import (
    HELD,
    fill,
    held_bits,
    keep_values,
    partial_fold,
    require_fillable,
    require_partial_schema,
    require_whole,
)
from .schema import avro_to_arrow, empty_table
from .schema_evolution import SchemaEvolutionError, project, require_evolvable

# The control columns of an event (payload columns keep their own names; none starts with "__").
_K, _SEQ, _DEL, _BDEL, _RESET, _N, _ROW = "__key", "__seq", "__del", "__bdel", "__reset", "__n", "__row"
# How a change replaces its base row: with the change's payload, or (partial merges) field by field
_MODE = "__mode"
_REPLACE, _LOG_FIRST, _BASE_FIRST = 0, 1, 2
_BASE_SEQ = BASE_SEQ
_BASE_N = -(1 << 62)  # arrival order of base rows: before every log record, in row order
_CURSOR_ROWS = 8192   # rows per batch of a spilled file (what a cursor holds)
_READ_BUFFER = 1 << 20  # bytes of a base file's column chunk read at a time

DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024
MIN_BUDGET_BYTES = 1024 * 1024
MAX_BUCKETS = 256  # open files and cursors; 256 buckets of a 256 MB budget: logs of ~16 GB decoded


@dataclass
class MergeStats:
    """What the merge read and wrote (the write stat's counts, as `compaction._record_counts` defines them)."""
    blocks_read: int = 0
    rollback_blocks: int = 0
    corrupt_blocks: int = 0
    log_records: int = 0
    log_keys: int = 0
    deletes: int = 0
    updates: int = 0
    inserts: int = 0
    rows_written: int = 0
    buckets: int = 1
    spilled_bytes: int = 0
    scan_ms: int = 0


@dataclass
class _Spill:
    """Tables appended in order, held in memory or (`path`) written to an Arrow IPC stream file."""
    schema: pa.Schema
    path: str | None = None
    tables: list[pa.Table] = field(default_factory=list)
    chunk_rows: int = _CURSOR_ROWS  # rows per batch read back
    _sink: pa.NativeFile | None = None
    _writer: pa.ipc.RecordBatchStreamWriter | None = None

    def append(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        table = table.cast(self.schema) if not table.schema.equals(self.schema) else table
        if self.path is None:
            self.tables.append(table)
            return
        if self._writer is None:
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = pa.ipc.new_stream(self._sink, self.schema)
        self._writer.write_table(table, max_chunksize=self.chunk_rows)

    def close(self) -> int:
        """Finish writing; the bytes written."""
        if self._writer is None or self._sink is None:
            return 0
        self._writer.close()
        self._sink.close()
        self._writer = None
        return os.path.getsize(self.path) if self.path else 0

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.path is None:
            for t in self.tables:
                yield from t.to_batches(max_chunksize=self.chunk_rows)
            return
        if not os.path.exists(self.path):
            return
        with pa.OSFile(self.path, "rb") as source:
            yield from pa.ipc.open_stream(source)

    def read(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.schema)

    def release(self) -> None:
        self.tables = []
        if self.path and os.path.exists(self.path):
            os.remove(self.path)


class _Cursor:
    """Rows of a spill sorted by `__row`, taken in order by row ranges."""

    def __init__(self, spill: _Spill):
        self._batches = spill.batches()
        self._pending: pa.RecordBatch | None = None

    def take_below(self, end: int) -> list[pa.RecordBatch]:
        out: list[pa.RecordBatch] = []
        while True:
            if self._pending is None:
                self._pending = next(self._batches, None)
                if self._pending is None:
                    return out
            rows = self._pending.column(_ROW)
            n = int(np.searchsorted(rows.to_numpy(), end, side="left"))
            if n < len(rows):
                out.append(self._pending.slice(0, n))
                self._pending = self._pending.slice(n)
                return out
            out.append(self._pending)
            self._pending = None


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


def _buckets_of(keys: pa.Array | pa.ChunkedArray, buckets: int) -> np.ndarray:
    import polars as pl  # here: a third of a second that the jobs merging no records (archival, cleans) skip

    hashes = pl.Series(keys if isinstance(keys, pa.Array) else keys.combine_chunks()).hash(seed=0)
    return (hashes.to_numpy() % np.uint64(buckets)).astype(np.int64)


def _partition(table: pa.Table, buckets: int) -> Iterator[pa.Table]:
    """`table` split by the hash of its `__key`, each part in the rows' order: one take puts the rows in bucket
    order (one copy of the table, a quarter of the budget at most), the parts are slices of it. A take per part
    would gather from every chunk of the table again for each part."""
    if buckets == 1:
        yield table
        return
    which = _buckets_of(table.column(_K), buckets)
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(buckets + 1))
    del which
    ordered = table.take(pa.array(order))
    del order
    for b in range(buckets):
        yield ordered.slice(int(bounds[b]), int(bounds[b + 1] - bounds[b]))


def _fold(events: pa.Table, ords: list[str], rules: MergeRules, payload: list[str]) -> pa.Table:
    """One event per key (its winner, or under a partial merge the merged state; sorted by key); `ords` are the
    ordering columns (none: commit-time), `payload` the payload columns."""
    if rules.partial is not None:
        return partial_fold(events, _K, _N, ords, rules, payload)
    return events.take(fold_winners(events.select([_K, _SEQ, *ords, _DEL, _BDEL, _RESET, _N]), _K, ords, [_N]))


class BoundedMerge:
    """One file slice merged within `budget_bytes`; `run(sink)` hands the merged rows, in the output schema, to
    `sink` batch by batch and returns the counts."""

    def __init__(self, storage: Storage, base_file: str | None, log_files: list[str],
                 is_valid_instant: Callable[[str], bool], rules: MergeRules, schema: pa.Schema,
                 budget_bytes: int = DEFAULT_BUDGET_BYTES, spill_dir: str | None = None):
        self.storage, self.base_file, self.log_files = storage, base_file, log_files
        self.is_valid_instant, self.rules, self.schema = is_valid_instant, rules, schema
        self.budget = max(budget_bytes, 1)
        self.spill_dir = spill_dir
        self.history = read_history(storage)  # schema-on-read renames, read once for the slice
        self._base: pq.ParquetFile | None = None  # the base file, opened once (_base_file)
        self.ord_types = ord_types(rules, schema)
        self.ords = ord_names(rules)
        self.payload = _nullable(schema)
        self.held: dict[int, list[str]] = {}  # partial-update blocks (by write position): the fields they hold
        self._schemas()
        self.stats = MergeStats()

    def _schemas(self) -> None:
        """The schemas of events, base keys and changes under the rules (KEEP_VALUES: events and changes carry
        the fields their records hold, `HELD`)."""
        ord_fields = [pa.field(n, t) for n, t in zip(self.ords, self.ord_types, strict=True)]
        held = [pa.field(HELD, pa.binary((len(self.payload) + 7) // 8))] if self.keep else []
        self.event_schema = pa.schema([pa.field(_K, pa.string()), pa.field(_SEQ, pa.int64()), *ord_fields,
                                       pa.field(_DEL, pa.bool_()), pa.field(_BDEL, pa.bool_()),
                                       pa.field(_RESET, pa.bool_()), pa.field(_N, pa.int64()), *held,
                                       *self.payload])
        self.base_key_schema = pa.schema([pa.field(_K, pa.string()), *ord_fields, pa.field(_ROW, pa.int64())])
        self.change_schema = pa.schema([pa.field(_ROW, pa.int64()), pa.field(_DEL, pa.bool_()),
                                        pa.field(_MODE, pa.int8()), *held, *self.payload])

    @property
    def keep(self) -> bool:
        return self.rules.partial is PartialMode.KEEP_VALUES

    def _fold(self, events: pa.Table) -> pa.Table:
        return _fold(events, self.ords, self.rules, self.payload.names)

    # --- step 1: the logs ---------------------------------------------------------------------------------

    def _log_events(self, stack: ExitStack) -> Iterator[tuple[pa.Table, int, int]]:
        """(events, bytes of log consumed so far, bytes of logs in all) per valid data or delete block, in
        write order; the same blocks `merge.scan_logs` keeps, refused the same way."""
        blocks, paths = [], []
        for path in self.log_files:
            handle: IO[bytes] = stack.enter_context(self.storage.open(path))
            read = read_log_file(handle)
            blocks.extend(read)
            paths.extend([path] * len(read))
        total = sum(b.size for b in blocks) or 1
        rolled_back = {b.target_instant_time for b in blocks if b.block_type is BlockType.COMMAND and b.is_rollback}
        self.stats.blocks_read = len(blocks)
        self.stats.rollback_blocks = len(rolled_back)
        self.stats.corrupt_blocks = sum(1 for b in blocks if b.block_type is BlockType.CORRUPT)
        valid = [b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.DELETE)
                 and b.instant_time is not None and b.instant_time not in rolled_back
                 and self.is_valid_instant(b.instant_time) for b in blocks]
        for pos, b in enumerate(blocks):
            if valid[pos] and b.is_partial:
                what = f"the log block of instant {b.instant_time} in {paths[pos]}"
                self.held[pos] = partial_block_fields(bool(self.history), b.schema, self.rules, what, pos)
        if self.held:  # before the first event: Hudi merges partially from the first partial block on
            self.rules = keep_values(self.rules, "a partial-update log block", min(self.held))
            self._schemas()
        consumed, arrival = 0, 0
        for pos, b in enumerate(blocks):
            before = consumed
            consumed += b.size
            instant = b.instant_time
            if not valid[pos] or instant is None:
                continue
            if b.block_type is BlockType.DELETE:
                parts: Iterator[pa.Table] = iter([self._delete_events(pos, b.deleted_keys(), arrival)])
                count = 1
            else:
                what = f"the log block of instant {instant} in {paths[pos]}"
                require_partial_schema(b.schema, self.rules, what)
                if b.schema is not None:
                    require_evolvable(history_rename_schema(self.history, avro_to_arrow(b.schema), instant),
                                      self.schema, what)
                # columns renamed by schema-on-read evolution take their latest names
                parts = self._block_records(b, instant, what)
                count = b.record_count()
            done = 0
            for part in parts:
                events = part if b.block_type is BlockType.DELETE else self._data_events(pos, part, arrival)
                arrival += events.num_rows
                self.stats.log_records += events.num_rows
                done += events.num_rows
                # the share of the block read so far: a block can hold most of the logs
                yield events, before + int(b.size * min(1.0, done / max(count, 1))), total

    def _block_records(self, block: LogBlock, instant: str, what: str) -> Iterator[pa.Table]:
        """A data block's records in batches of about an eighth of the budget of content, read and decoded a batch
        at a time (neither the block's bytes nor its records are held whole)."""
        if block.schema is None and block.block_type is BlockType.PARQUET_DATA:
            require_evolvable(history_rename_schema(self.history, block.parquet_file().schema_arrow, instant),
                              self.schema, what)
        for part in block.record_batches(max(self.budget // 8, 1)):
            yield history_rename(self.history, part, instant)

    def _control(self, keys: pa.Array | pa.ChunkedArray, pos: int, ords: list[pa.Array], deleted: pa.Array,
                 block_deletes: bool, resets: pa.Array, arrival: int) -> list[pa.Array | pa.ChunkedArray]:
        n = len(keys)
        # Only event-time ordering lets an older write survive a later one; only there do resets matter.
        return [keys.cast(pa.string()), pa.repeat(pa.scalar(pos, pa.int64()), n), *ords, deleted,
                pa.repeat(block_deletes, n), resets if self.ords else pa.repeat(False, n),
                pa.array(np.arange(arrival, arrival + n, dtype=np.int64))]

    def _data_events(self, pos: int, records: pa.Table, arrival: int) -> pa.Table:
        rows = project(records, self.schema)
        ords = ord_columns(records, self.rules, self.ord_types)
        deleted = data_deletes(records, self.rules)
        control = self._control(record_keys(records, self.rules), pos, ords, deleted, False,
                                data_resets(deleted, ords), arrival)
        held = [held_bits(self.payload.names, self.held.get(pos), rows.num_rows)] if self.keep else []
        return pa.Table.from_arrays([*control, *held, *rows.columns], schema=self.event_schema)

    def _delete_events(self, pos: int, deleted: list[tuple[str, str, object]], arrival: int) -> pa.Table:
        n = len(deleted)
        ords, natural = delete_block_ords([d[2] for d in deleted], self.rules, self.ord_types)
        control = self._control(pa.array([d[0] for d in deleted], pa.string()), pos, ords, pa.repeat(True, n),
                                True, natural, arrival)
        held = [held_bits(self.payload.names, [], n)] if self.keep else []
        return pa.Table.from_arrays([*control, *held, *(pa.nulls(n, f.type) for f in self.payload)],
                                    schema=self.event_schema)

    @staticmethod
    def _chunks(blocks: Iterator[tuple[pa.Table, int, int]], limit: int) -> Iterator[tuple[pa.Table, int, int]]:
        """A block's events in slices of about `limit` bytes: a block bigger than the budget is folded and
        spilled a slice at a time (slices keep their order, the fold's ties go to the later one)."""
        for events, consumed, total in blocks:
            rows = max(1, int(limit / max(events.nbytes / max(events.num_rows, 1), 1)))
            for start in range(0, events.num_rows, rows):
                yield events.slice(start, rows), consumed, total

    def _scan_logs(self, stack: ExitStack, tmp: str) -> list[_Spill]:
        """The log events, folded, in one bucket in memory or in hash buckets on disk."""
        limit = self.budget // 4
        buffer: list[pa.Table] = []
        held = seen = 0
        buckets: list[_Spill] | None = None
        for events, consumed, total in self._chunks(self._log_events(stack), limit):
            buffer.append(events)
            held += events.nbytes
            seen += events.nbytes
            if held <= limit:
                continue
            events = pa.concat_tables(buffer)
            if buckets is None:
                events = self._fold(events)
                buffer, held = [events], events.nbytes
                if held <= limit // 2:
                    continue  # updates of the same keys: folding keeps the logs in memory
            # Once spilling, a buffer goes to the buckets unfolded: each bucket is folded when it is read back
            # (`_fold_runs`), and folding it here too would sort every event twice.
            if buckets is None:  # the logs do not fit: as many buckets as the remaining logs need
                # Buckets receive the events unfolded: what they will hold is about the events seen so far.
                estimate = seen * total / max(consumed, 1) + self._base_key_bytes()
                count = min(MAX_BUCKETS, max(2, math.ceil(estimate / (self.budget / 4))))
                buckets = [_Spill(self.event_schema, os.path.join(tmp, f"log-{b}.arrows")) for b in range(count)]
            for spill, part in zip(buckets, _partition(events, len(buckets)), strict=True):
                spill.append(part)
            buffer, held = [], 0
        if buckets is None:
            rest = self._fold(pa.concat_tables(buffer)) if buffer else empty_table(self.event_schema)
            return [_Spill(self.event_schema, tables=[rest])]
        rest = pa.concat_tables(buffer) if buffer else empty_table(self.event_schema)
        for spill, part in zip(buckets, _partition(rest, len(buckets)), strict=True):
            spill.append(part)
        self.stats.spilled_bytes += sum(s.close() for s in buckets)
        return buckets

    # --- step 2: the base file's keys ---------------------------------------------------------------------

    def _base_instant(self) -> str:
        """The instant that wrote the base file: its schema version on schema-on-read tables. A file not named
        as Hudi names base files is read as stored (on other tables) or refused."""
        assert self.base_file is not None
        name = BaseFileName.parse(self.base_file.rsplit("/", 1)[-1])
        if name is not None:
            return name.instant
        if self.history:
            raise HudiError(f"{self.base_file} is not a base file name: its schema version is unknown")
        return "0"

    def _base_file(self) -> pq.ParquetFile:
        """The base file, opened once for the merge's passes over it (on an object store each open would be a
        HEAD and the footer's GETs again); closed when the merge ends."""
        assert self.base_file is not None
        if self._base is None:
            fs = self.storage.arrow_filesystem()
            # buffer_size: column chunks are read a buffer at a time, not whole (a row group can be 100s of MB)
            self._base = pq.ParquetFile(fs.open_input_file(self.storage.full(self.base_file)),
                                        buffer_size=_READ_BUFFER, pre_buffer=False)
        return self._base

    def _base_key_bytes(self) -> int:
        if self.base_file is None:
            return 0
        meta = self._base_file().metadata
        key = self.rules.key_fields[0] if self.rules.key_fields else KEY
        key_col = meta.schema.names.index(key) if key in meta.schema.names else None
        if key_col is None or not meta.num_row_groups:
            return 0
        key_bytes = sum(meta.row_group(g).column(key_col).total_uncompressed_size for g in range(meta.num_row_groups))
        return int(key_bytes + meta.num_rows * 24)

    def _batch_rows(self, pf: pq.ParquetFile) -> int:
        """Rows per base batch: about an eighth of the budget of decoded rows."""
        meta = pf.metadata
        if not meta.num_rows:
            return 1024
        row_bytes = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)) / meta.num_rows
        return max(1024, int(self.budget / 8 / max(row_bytes * 1.5, 1)))

    def _base_keys(self, logs: list[_Spill], tmp: str) -> list[_Spill]:
        """Per bucket, the base rows' (key, ordering value, row number): only the rows whose key the logs have
        when they are in memory, all of them (partitioned) when they were spilled."""
        in_memory = logs[0].path is None
        keys: list[_Spill] = [_Spill(self.base_key_schema, None if in_memory else os.path.join(tmp, f"base-{b}.arrows"))
                              for b in range(len(logs))]
        if self.base_file is None:
            return keys
        log_keys = logs[0].tables[0].column(_K) if in_memory and logs[0].tables else None
        if in_memory and (log_keys is None or not len(log_keys)):
            return keys
        pf = self._base_file()
        key_columns = list(self.rules.key_fields) or [KEY]
        stored = pf.schema_arrow.names
        columns = [*key_columns, *(f for f in self.rules.ordering if f in stored and f not in key_columns)]
        row = 0
        for batch in pf.iter_batches(batch_size=self._batch_rows(pf) * 4, columns=columns):
            t = pa.Table.from_batches([batch])
            part = pa.Table.from_arrays(
                [record_keys(t, self.rules), *ord_columns(t, self.rules, self.ord_types),
                 pa.array(np.arange(row, row + t.num_rows, dtype=np.int64))], schema=self.base_key_schema)
            row += t.num_rows
            if in_memory:
                keys[0].append(part.filter(pc.is_in(part.column(_K), value_set=log_keys)))
            else:
                for spill, piece in zip(keys, _partition(part, len(keys)), strict=True):
                    spill.append(piece)
        self.stats.spilled_bytes += sum(s.close() for s in keys)
        return keys

    # --- step 2': each bucket's winners -------------------------------------------------------------------

    def _fold_runs(self, log: _Spill) -> pa.Table:
        """A bucket's events folded to one per key, read batch by batch and folded whenever a quarter of the budget
        is held (the fold is associative: the bucket need not fit, only its distinct keys)."""
        parts: list[pa.Table] = []
        held = 0
        for batch in log.batches():
            parts.append(pa.Table.from_batches([batch], schema=self.event_schema))
            held += batch.nbytes
            if held > self.budget // 4:
                folded = self._fold(pa.concat_tables(parts))
                parts, held = [folded], folded.nbytes
        return self._fold(pa.concat_tables(parts) if parts else empty_table(self.event_schema))

    def _resolve(self, logs: list[_Spill], base_keys: list[_Spill], tmp: str) -> tuple[list[_Spill], _Spill]:
        """Per bucket, the changes to base rows (sorted by row); the inserted rows."""
        in_memory = logs[0].path is None
        changes, inserts = [], _Spill(self.payload, None if in_memory else os.path.join(tmp, "inserts.arrows"))
        for b, (log, base) in enumerate(zip(logs, base_keys, strict=True)):
            state = self._fold_runs(log)  # runs of one bucket, in write order: one event per key
            log.release()
            self.stats.log_keys += state.num_rows
            bk = base.read()
            base.release()
            bk = bk.filter(pc.is_in(bk.column(_K), value_set=state.column(_K)))
            n = bk.num_rows
            control = [_K, _SEQ, *self.ords, _DEL, _BDEL, _RESET, _N]
            base_events = pa.Table.from_arrays(
                [bk.column(_K), pa.repeat(pa.scalar(_BASE_SEQ, pa.int64()), n), *bk.select(self.ords).columns,
                 pa.repeat(False, n), pa.repeat(False, n), pa.repeat(False, n),
                 pc.add(bk.column(_ROW), pa.scalar(_BASE_N, pa.int64()))], names=control)
            log_ctrl = state.select(control)
            events = pa.concat_tables([base_events.cast(log_ctrl.schema), log_ctrl])
            idx = fold_winners(events, _K, self.ords, [_N], self.rules.base_loses)
            won = events.take(idx).append_column("__i", idx)
            from_base = pc.equal(won.column(_SEQ), _BASE_SEQ)
            # A log winner replaces the key's last base row; every other base row of a key the logs touch goes.
            log_won = won.filter(pc.invert(from_base))
            kept_rows = pc.add(won.filter(from_base).column(_N), pa.scalar(-_BASE_N, pa.int64()))
            winner_rows = pc.subtract(log_won.column("__i"), pa.scalar(n, pa.int64()))
            winners = state.take(winner_rows)
            is_delete = winners.column(_DEL)
            hit = pc.is_in(winners.column(_K), value_set=bk.column(_K))
            # the base row each log winner replaces: the key's last base row
            last_row = bk.group_by(_K).aggregate([(_ROW, "max")]).rename_columns([_K, "__last_row"])
            targets = pa.table({_K: winners.column(_K), "__w": pa.array(np.arange(winners.num_rows))}).join(
                last_row, _K, join_type="left outer").sort_by("__w").column("__last_row")
            replace = pc.and_(hit, pc.invert(is_delete))
            repl = winners.filter(replace)
            repl_rows = targets.filter(replace)
            # Dropped: base rows of touched keys that neither won nor are replaced.
            kept = pc.is_in(bk.column(_ROW), value_set=pa.concat_arrays(
                [kept_rows.combine_chunks() if isinstance(kept_rows, pa.ChunkedArray) else kept_rows,
                 repl_rows.combine_chunks().cast(pa.int64())]))
            dropped = bk.filter(pc.invert(kept)).column(_ROW)
            partial = self.rules.partial is not None
            held = [HELD] if self.keep else []
            changes_of_bucket = [
                pa.Table.from_arrays([repl_rows.cast(pa.int64()), pa.repeat(False, repl.num_rows),
                                      pa.repeat(pa.scalar(_LOG_FIRST if partial else _REPLACE, pa.int8()),
                                                repl.num_rows),
                                      *repl.select([*held, *self.payload.names]).columns], schema=self.change_schema),
                pa.Table.from_arrays([dropped, pa.repeat(True, len(dropped)), pa.nulls(len(dropped), pa.int8()),
                                      *(pa.nulls(len(dropped), f.type) for f in list(self.change_schema)[3:])],
                                     schema=self.change_schema)]
            if partial:  # a base row that won takes the state's values in its unset fields, unless the state deletes
                base_won = won.filter(from_base)
                of_state = state.take(pc.index_in(base_won.column(_K), value_set=state.column(_K)))
                live = pc.invert(of_state.column(_DEL))
                filled = of_state.filter(live)
                changes_of_bucket.append(pa.Table.from_arrays(
                    [pc.add(base_won.filter(live).column(_N), pa.scalar(-_BASE_N, pa.int64())),
                     pa.repeat(False, filled.num_rows), pa.repeat(pa.scalar(_BASE_FIRST, pa.int8()), filled.num_rows),
                     *filled.select([*held, *self.payload.names]).columns], schema=self.change_schema))
            change = pa.concat_tables(changes_of_bucket)
            change = change.sort_by(_ROW)
            # The cursors of `_apply` hold a batch of each bucket: together about a sixteenth of the budget.
            row_bytes = change.nbytes / max(change.num_rows, 1)
            chunk_rows = max(256, min(_CURSOR_ROWS, int(self.budget / 16 / len(logs) / max(row_bytes, 1))))
            spill = _Spill(self.change_schema, None if in_memory else os.path.join(tmp, f"changes-{b}.arrows"),
                           chunk_rows=chunk_rows)
            spill.append(change)
            self.stats.spilled_bytes += spill.close()
            changes.append(spill)
            inserted = winners.filter(pc.and_(pc.invert(hit), pc.invert(is_delete)))
            if self.keep:  # before `_apply` writes a row
                require_whole(inserted, _K, len(self.payload))
            inserts.append(inserted.select(self.payload.names))
            # counts, as compaction._record_counts defines them
            deleted_keys = winners.filter(pc.and_(hit, is_delete)).column(_K)
            self.stats.deletes += pc.sum(pc.is_in(bk.column(_K), value_set=deleted_keys)).as_py() or 0
            self.stats.updates += repl.num_rows + len(kept_rows)
            self.stats.inserts += inserted.num_rows
        self.stats.spilled_bytes += inserts.close()
        return changes, inserts

    # --- step 3: the output ---------------------------------------------------------------------------------

    def _out(self, t: pa.Table) -> pa.Table:
        return pa.Table.from_arrays(t.select(self.schema.names).columns, schema=self.schema)

    def run(self, sink: Callable[[pa.Table], None]) -> MergeStats:
        try:
            return self._run(sink)
        finally:
            if self._base is not None:
                self._base.close()
                self._base = None

    def _run(self, sink: Callable[[pa.Table], None]) -> MergeStats:
        import time
        started = time.monotonic()
        require_fillable(self.schema, self.rules)
        if self.base_file is not None:
            stored = self._base_file().schema_arrow
            renamed = history_rename_schema(self.history, stored, self._base_instant())
            require_evolvable(renamed, self.schema, f"base file {self.base_file}")
            moved = [f for f in self.rules.ordering if f in renamed.names and f not in stored.names]
            if moved:  # the base keys are streamed by column name
                raise SchemaEvolutionError(
                    f"base file {self.base_file}: ordering field {moved[0]} was renamed by schema-on-read "
                    "evolution; TMS's bounded merge reads ordering values by stored name and refuses it")
        with ExitStack() as stack:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="tms-merge-", dir=self.spill_dir))
            logs = self._scan_logs(stack, tmp)
            self.stats.buckets = len(logs)
            self.stats.scan_ms = int((time.monotonic() - started) * 1000)
            base_keys = self._base_keys(logs, tmp)
            changes, inserts = self._resolve(logs, base_keys, tmp)
            if self.base_file is not None:
                self._apply(changes, sink)
            for batch in inserts.batches():
                rows = self._out(pa.Table.from_batches([batch]))
                self.stats.rows_written += rows.num_rows
                sink(rows)
        return self.stats

    def _filled(self, state: pa.Table, base: pa.Table, mode: pa.ChunkedArray,
                held: pa.ChunkedArray | None) -> pa.Table:
        """Partial merges: each state row filled from its base row, or (`_BASE_FIRST`) the base row from it;
        `held`: the fields each state row holds (KEEP_VALUES)."""
        log_first = fill(state, base, self.rules, True, held)
        base_first = fill(base, state, self.rules, False)
        which = pc.equal(mode, _BASE_FIRST).combine_chunks()
        return pa.Table.from_arrays([pc.if_else(which, b, s) for s, b in zip(log_first.columns, base_first.columns,
                                                                             strict=True)], schema=self.schema)

    def _apply(self, changes: list[_Spill], sink: Callable[[pa.Table], None]) -> None:
        pf = self._base_file()
        cursors = [_Cursor(c) for c in changes]
        start = 0
        for batch in pf.iter_batches(batch_size=self._batch_rows(pf)):
            rows = project(history_rename(self.history, pa.Table.from_batches([batch]), self._base_instant()),
                           self.schema)
            n = rows.num_rows
            end = start + n
            got = [b for c in cursors for b in c.take_below(end)]
            if got:
                ch = pa.Table.from_batches(got, schema=self.change_schema)
                local = ch.column(_ROW).to_numpy() - start
                dropped = ch.column(_DEL).to_numpy(zero_copy_only=False)
                keep = np.ones(n, np.bool_)
                keep[local[dropped]] = False
                index = np.arange(n, dtype=np.int64)
                replaced = local[~dropped]
                index[replaced] = n + np.arange(len(replaced), dtype=np.int64)
                kept = ch.filter(pc.invert(ch.column(_DEL)))
                repl = self._out(kept)
                if self.rules.partial is not None:
                    repl = self._filled(repl, rows.take(pa.array(replaced)), kept.column(_MODE),
                                        kept.column(HELD) if self.keep else None)
                rows = pa.concat_tables([rows, repl]).take(pa.array(index[keep]))
            start = end
            self.stats.rows_written += rows.num_rows
            sink(rows)
