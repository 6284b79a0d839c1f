"""Snapshot and time-travel reads of a whole table: every latest file slice, merged."""
from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from .fs_view import FileSlice
from .merge import merge_slice
from .table import HudiTable


def iter_snapshot(table: HudiTable, as_of: str | None = None, columns: list[str] | None = None,
                  threads: int | None = None) -> Iterator[pa.Table]:
    """The merged rows of each latest file slice at `as_of` (default: now), one table per slice.
    Slices are merged in parallel threads (pyarrow and parquet decoding release the GIL)."""
    table.config.require_builtin_merge()
    view = table.file_system_view(as_of=as_of)
    slices = view.merged_latest_slices()

    def one(fs: FileSlice) -> pa.Table:
        return merge_slice(table.storage, table.config, fs, view.is_completed, columns)

    workers = threads or min(8, os.cpu_count() or 2)
    if workers <= 1 or len(slices) <= 1:
        for fs in slices:
            yield one(fs)
        return
    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(one, slices)


def read_snapshot(table: HudiTable, as_of: str | None = None, columns: list[str] | None = None) -> pa.Table:
    parts = [t for t in iter_snapshot(table, as_of, columns) if t.num_rows]
    if not parts:
        return pa.table({})
    return pa.concat_tables(parts, promote_options="permissive")
