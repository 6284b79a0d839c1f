"""Base file formats: which ones a table uses (`hoodie.table.base.file.format`), and reading and writing
them. Parquet is read with pyarrow, Lance (Hudi 1.1) with the `pylance` package. ORC and HFile base files
are refused: TMS has no reader whose results were checked against Hudi's, and a table it cannot read
exactly must never be read at all."""
from __future__ import annotations

import posixpath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..config import table as table_config
from ..errors import UnsupportedTableError
from ..storage.table_storage import Storage
from ..table.properties import TableConfig

PARQUET, ORC, HFILE, LANCE = "PARQUET", "ORC", "HFILE", "LANCE"
KNOWN_FORMATS = (PARQUET, ORC, HFILE, LANCE)
READABLE_FORMATS = (PARQUET, LANCE)
# The Lance file format version Hudi 1.1 writes (file metadata 0.3, i.e. Lance file format 2.0).
LANCE_FILE_VERSION = "2.0"


def table_base_format(config: TableConfig) -> str:
    """The table's base file format, upper case (Hudi's default is PARQUET)."""
    return table_config.BASE_FILE_FORMAT.value(config.props).strip().upper()


def format_of_extension(extension: str) -> str:
    return extension.upper()


def extension_of(fmt: str) -> str:
    return fmt.lower()


def unreadable_format_reason(fmt: str) -> str | None:
    """Why TMS cannot read base files of this format exactly, or None if it can."""
    if fmt in READABLE_FORMATS:
        return None
    if fmt in KNOWN_FORMATS:
        return (f"its base files are {fmt}: TMS reads only {' and '.join(READABLE_FORMATS)} base files "
                "exactly, and refuses rather than read it wrongly")
    return f"its base file format {fmt!r} is unknown to TMS"


def require_readable_format(fmt: str, what: str) -> None:
    reason = unreadable_format_reason(fmt)
    if reason:
        raise UnsupportedTableError(f"{what}: {reason}")


# --- reading -----------------------------------------------------------------------------------

def read_base_file(storage: Storage, rel: str, columns: list[str] | None = None) -> pa.Table:
    """The rows of one base file, whatever its format; refuses formats TMS cannot read exactly."""
    fmt = format_of_extension(posixpath.splitext(rel)[1].lstrip("."))
    if fmt == PARQUET:
        return pq.read_table(storage.full(rel), filesystem=storage.arrow_filesystem(), columns=columns)
    if fmt == LANCE:
        with storage.local_copy(rel) as path:  # Lance reads paths only
            reader = _lance_file().LanceFileReader(path, columns=columns)
            return reader.read_all().to_table()
    require_readable_format(fmt, f"base file {rel}")
    raise AssertionError("unreachable")


def read_base_schema(storage: Storage, rel: str) -> pa.Schema:
    """The schema of one base file, from its footer (Parquet) without reading its rows."""
    fmt = format_of_extension(posixpath.splitext(rel)[1].lstrip("."))
    if fmt == PARQUET:
        return pq.read_schema(storage.full(rel), filesystem=storage.arrow_filesystem())
    if fmt == LANCE:
        with storage.local_copy(rel) as path:
            return _lance_file().LanceFileReader(path).metadata().schema
    require_readable_format(fmt, f"base file {rel}")
    raise AssertionError("unreachable")


# --- writing -----------------------------------------------------------------------------------

def write_lance_file(storage: Storage, rel: str, rows: pa.Table, metadata: dict[bytes, bytes]) -> None:
    """Write `rows` as a new Lance file (never over an existing one), schema metadata included, as Hudi's
    Lance writer does (it keeps the record-key bloom filter and min/max keys there)."""
    schema = rows.schema.remove_metadata().with_metadata(metadata)
    storage.create_from_local(rel, lambda path: _write_lance(path, rows, schema))  # Lance writes paths only


def _lance_file() -> Any:
    """pylance, imported on first use: it is not fork-safe (it warns once imported in a process that forks,
    as Spark's Python workers and the worker's job processes do), and Parquet tables never need it."""
    import lance.file
    return lance.file


def _write_lance(path: str, rows: pa.Table, schema: pa.Schema) -> None:
    writer = _lance_file().LanceFileWriter(path, schema, version=LANCE_FILE_VERSION)
    try:
        for batch in rows.cast(schema).to_batches():
            writer.write_batch(batch)
    finally:
        writer.close()
