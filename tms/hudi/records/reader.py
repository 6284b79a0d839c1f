"""Snapshot and time-travel reads of a whole table: every latest file slice, merged."""
from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from ..fs_view.view import FileSlice
from ..table.hudi_table import HudiTable
from ..table.lost_files import require_listed_files
from .base_format import require_readable_format
from .merge import merge_slice
from .readability import require_readable
from .schema import META_FIELDS
from .schema_evolution import full_arrow_schema, latest_data_schema, require_resolvable_history


def iter_snapshot(table: HudiTable, as_of: str | None = None, columns: list[str] | None = None,
                  threads: int | None = None) -> Iterator[pa.Table]:
    """The merged rows of each latest file slice at `as_of` (default: now), one table per slice.
    Slices are merged in parallel threads (pyarrow and parquet decoding release the GIL).
    Rows come in the table's latest schema (at `as_of`): files written with older schemas are projected to it.
    A table TMS cannot read exactly is refused (UnsupportedTableError) before any row is read, and so is one whose
    metadata table lists a file of a latest slice that storage lost (DamagedFilesError)."""
    require_readable(table)
    data_schema = latest_data_schema(table, as_of)
    schema = None
    if data_schema is not None:
        require_resolvable_history(table, data_schema, as_of)
        schema = full_arrow_schema(data_schema)
    view = table.file_system_view(as_of=as_of)
    require_listed_files(table, view)  # a file the metadata table lists that storage lost: no partial answer
    slices = view.merged_latest_slices()
    for fs in slices:  # a base file of another format than the table's must not be half-read either
        if fs.base_file:
            require_readable_format(fs.base_file.name.extension.upper(),
                                    f"table {table.name}, base file {fs.base_file.path}")
    # Without meta fields (virtual keys) Hudi's readers return the data columns only.
    hidden = () if table.config.populate_meta_fields else META_FIELDS

    def one(fs: FileSlice) -> pa.Table:
        rows = merge_slice(table.storage, table.config, fs, view.is_completed, columns, schema)
        return rows.drop_columns([c for c in hidden if c in rows.column_names]) if hidden else rows

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
