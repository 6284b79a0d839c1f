"""Rows sorted within a fixed memory budget (clustering a group bigger than the budget): the rows come in batches,
are gathered into runs of about a quarter of the budget, each run is sorted and spilled to local disk (Arrow IPC,
uncompressed: the values come back in their own types), and the runs are merged k ways.

The order is that of `pa.Table.sort_by` on the sort columns (ascending, nulls last, NaN before null) with ties
to the earlier row: an arrival position is the last sort key, which makes every row's key unique. The merge
holds one small batch of each run: at each step the bound is the smallest last loaded row of the runs not yet
read through; every loaded row up to it is final, found in each run by a binary search on that row's key, and
is sorted once, with the others it is emitted with."""
from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

_POS = "__pos"
_MIN_BATCH_ROWS = 256


def _value_key(scalar: pa.Scalar) -> tuple[Any, ...]:
    """A sort value compared as Arrow sorts it ascending with nulls at the end: values, then NaN, then null.
    Temporal values compare by their integer (as Arrow does: as_py would drop nanoseconds)."""
    value: Any = scalar.value if pa.types.is_temporal(scalar.type) else scalar.as_py()
    if value is None:
        return (2,)
    if isinstance(value, float) and math.isnan(value):
        return (1,)
    return (0, value)


class SortedRuns:
    """Rows added with `add` (in the schema given), handed back in order by `sorted_batches`. `spill_dir` holds
    the runs while the object lives; `close` removes them."""

    def __init__(self, schema: pa.Schema, sort_columns: list[str], budget_bytes: int, spill_dir: str):
        self.schema = schema
        self.sort_columns = list(sort_columns)
        self.budget = max(budget_bytes, 1)
        self.spill_dir = spill_dir
        self.rows = 0
        self.runs: list[str] = []
        self._buffer: list[pa.Table] = []
        self._held = 0
        self._order = [(c, "ascending") for c in [*self.sort_columns, _POS]]

    def add(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        rows = rows.append_column(_POS, pa.array(np.arange(self.rows, self.rows + rows.num_rows, dtype=np.int64)))
        self.rows += rows.num_rows
        self._buffer.append(rows)
        self._held += rows.nbytes
        if self._held > self.budget // 4:
            self._spill()

    def _spill(self) -> None:
        if not self._buffer:
            return
        run = pa.concat_tables(self._buffer).sort_by(self._order)
        self._buffer, self._held = [], 0
        # Small batches: the merge holds one of each run, however many runs there are.
        row_bytes = max(run.nbytes / max(run.num_rows, 1), 1)
        batch_rows = max(_MIN_BATCH_ROWS, int(self.budget / 1024 / row_bytes))
        path = os.path.join(self.spill_dir, f"run-{len(self.runs)}.arrows")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, run.schema) as writer:
            writer.write_table(run, max_chunksize=batch_rows)
        self.runs.append(path)

    def sorted_batches(self, out_bytes: int | None = None) -> Iterator[pa.Table]:
        """The rows in order (without the arrival position), in tables of about `out_bytes` (default: an eighth
        of the budget)."""
        out_bytes = out_bytes or max(self.budget // 8, 1)
        if not self.runs:  # everything fits: one sort in memory
            if self._buffer:
                yield pa.concat_tables(self._buffer).sort_by(self._order).drop_columns([_POS])
            return
        self._spill()
        pending: list[pa.Table] = []
        held = 0
        for chunk in self._merge():
            pending.append(chunk)
            held += chunk.nbytes
            if held >= out_bytes:
                yield pa.concat_tables(pending).drop_columns([_POS])
                pending, held = [], 0
        if pending:
            yield pa.concat_tables(pending).drop_columns([_POS])

    def _key(self, t: pa.Table, row: int) -> tuple[Any, ...]:
        return tuple(_value_key(t.column(c)[row]) for c in [*self.sort_columns, _POS])

    def _count_up_to(self, t: pa.Table, bound: tuple[Any, ...]) -> int:
        """How many rows of the sorted `t` are at most `bound` (binary search)."""
        lo, hi = 0, t.num_rows
        while lo < hi:
            mid = (lo + hi) // 2
            if self._key(t, mid) <= bound:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _merge(self) -> Iterator[pa.Table]:
        files = [pa.OSFile(p, "rb") for p in self.runs]
        try:
            yield from self._merge_runs([pa.ipc.open_stream(f) for f in files])
        finally:
            for f in files:
                f.close()

    def _merge_runs(self, readers: list[pa.ipc.RecordBatchStreamReader]) -> Iterator[pa.Table]:
        loaded: list[pa.Table] = [pa.table({}) for _ in readers]  # each run's loaded rows not yet emitted
        done = [False] * len(readers)  # read through
        while True:
            for i, reader in enumerate(readers):
                if not loaded[i].num_rows and not done[i]:
                    try:
                        loaded[i] = pa.Table.from_batches([reader.read_next_batch()])
                    except StopIteration:
                        done[i] = True
            live = [i for i, t in enumerate(loaded) if t.num_rows]
            if not live:
                return
            unread = [i for i in live if not done[i]]
            if unread:  # rows past the smallest last loaded row of a run not read through may yet be preceded
                bound = min(self._key(loaded[i], loaded[i].num_rows - 1) for i in unread)
                counts = {i: self._count_up_to(loaded[i], bound) for i in live}
            else:  # every run read through: what is loaded is the rest
                counts = {i: loaded[i].num_rows for i in live}
            parts = []
            for i, n in counts.items():
                if n:
                    parts.append(loaded[i].slice(0, n))
                    loaded[i] = loaded[i].slice(n)
            yield pa.concat_tables(parts).sort_by(self._order)

    def close(self) -> None:
        for path in self.runs:
            if os.path.exists(path):
                os.remove(path)
        self.runs, self._buffer = [], []
