"""Hudi log files: read their blocks, write new blocks, name the files.

A log file is a sequence of blocks (all integers big-endian):

    #HUDI#                 magic
    int64  block length    bytes after this field, the trailing pointer included
    int32  format version  1
    int32  block type      BlockType
    header                 int32 count, then per entry int32 key, int32 length, UTF-8 value
    int64  content length
    content
    footer                 same layout as the header
    int64  block size      bytes of this block before this field, magic included

A writer that crashes mid-append leaves a partial block at the end of the file; it is
read as a CORRUPT block, as Hudi's HoodieLogFileReader does. Reading parses the
headers only: block content is read from the source and decoded when asked for, so a
reader can skip the blocks of rolled-back instants cheaply.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import IO, Any, cast

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from tms.hudi.records.schema import (
    arrow_to_records,
    avro_schema_json,
    avro_to_arrow,
    parse_avro_schema,
    records_to_arrow,
    with_meta_fields,
)

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
# Version of the content layout of Avro data and delete blocks (length-prefixed Avro).
CONTENT_VERSION = 3

_INT = struct.Struct(">i")
_INT_PAIR = struct.Struct(">ii")
_LONG = struct.Struct(">q")
_BLOCK_PREFIX = len(MAGIC) + _LONG.size  # magic + block length
_SCAN_CHUNK = 1 << 20


class BlockType(IntEnum):
    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC = 6


class HeaderKey(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    # Added by later Hudi versions; parsed so that their files read, never written here.
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    ROLLBACK = 0


_BLOCK_TYPES = {t.value for t in BlockType}
_HEADER_KEYS = {k.value for k in HeaderKey}


# ---------------------------------------------------------------------------------------
# Delete block content: Hudi's HoodieDeleteRecordList (hudi-common/src/main/avro).
# orderingVal is a union of wrapper records; the branch is the Java type of the value.


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "namespace": "org.apache.hudi.avro.model",
        "fields": [{"name": "value", "type": value_type}],
    }


_ORDERING_WRAPPERS = [
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
    _wrapper("DateWrapper", "int"),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", "long"),
]
# Hudi 1.1: the ordering value of a table ordered by several fields (an ArrayComparable), each element wrapped;
# appended to the union, so the branches before it keep their indexes (what Hudi 0.15 and 1.0 read).
_ARRAY_WRAPPER = {
    "type": "record",
    "name": "ArrayWrapper",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [{"name": "wrappedValues", "default": None, "type": ["null", {"type": "array", "items": [
        "null", *(f"org.apache.hudi.avro.model.{w['name']}" for w in _ORDERING_WRAPPERS),
        _wrapper("LocalDateWrapper", "int")]}]}],
}
_DECIMAL_WRAPPER_EXPONENT = decimal.Decimal(1).scaleb(-15)
_DECIMAL_WRAPPER_CONTEXT = decimal.Context(prec=30)
_EPOCH = datetime.date(1970, 1, 1)

_DELETE_RECORD_LIST = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": "org.apache.hudi.avro.model",
        "fields": [
            {
                "name": "deleteRecordList",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieDeleteRecord",
                        "fields": [
                            {"name": "recordKey", "type": ["null", "string"], "default": None},
                            {"name": "partitionPath", "type": ["null", "string"], "default": None},
                            {"name": "orderingVal", "type": ["null", *_ORDERING_WRAPPERS, _ARRAY_WRAPPER],
                             "default": None},
                        ],
                    },
                },
            }
        ],
    }
)

# The wrapper Java picks for an ordering field's value: the value read from an Avro
# record is a Boolean/Integer/Long/.../String, a LocalDate for `date` and a BigDecimal
# for `decimal`; other logical types (timestamps, times) arrive as their raw int/long.
_WRAPPER_OF_AVRO_TYPE = {
    "boolean": "BooleanWrapper",
    "int": "IntWrapper",
    "long": "LongWrapper",
    "float": "FloatWrapper",
    "double": "DoubleWrapper",
    "bytes": "BytesWrapper",
    "string": "StringWrapper",
    "enum": "StringWrapper",
    "date": "DateWrapper",
    "decimal": "DecimalWrapper",
}


def _ordering_wrapper(ordering_type: Any) -> str:
    """The wrapper record name for an ordering field's Avro type (a name, a dict, or a
    nullable union)."""
    avro_type = ordering_type
    if isinstance(avro_type, list):
        avro_type = next(t for t in avro_type if t != "null")
    if isinstance(avro_type, dict):
        logical = avro_type.get("logicalType")
        avro_type = logical if logical in ("date", "decimal") else avro_type["type"]
    if avro_type not in _WRAPPER_OF_AVRO_TYPE:
        raise ValueError(f"unsupported ordering field type: {ordering_type!r}")
    return _WRAPPER_OF_AVRO_TYPE[avro_type]


def _wrap_ordering_value(value: Any, wrapper: str) -> Any:
    if value is None:
        # Java's DeleteRecord default: an Integer 0 is "delete whatever the ordering".
        # (A LongWrapper 0 is compared like any value and loses to every positive one.)
        wrapper, value = "IntWrapper", 0
    elif wrapper == "DateWrapper" and isinstance(value, datetime.date):
        value = (value - _EPOCH).days
    elif wrapper == "DecimalWrapper":
        value = decimal.Decimal(value).quantize(_DECIMAL_WRAPPER_EXPONENT, context=_DECIMAL_WRAPPER_CONTEXT)
    # fastavro picks a union branch by record name when given a (name, value) pair.
    return (f"org.apache.hudi.avro.model.{wrapper}", {"value": value})


def _wrap_ordering_values(values: tuple[Any, ...] | None, wrappers: list[str]) -> Any:
    """The ordering value of a table of several ordering fields: an ArrayWrapper of each field's wrapped value
    (None: Java's "no ordering value", an Integer 0, as for one field)."""
    if values is None:
        return _wrap_ordering_value(None, "")
    wrapped = [None if v is None else _wrap_ordering_value(v, w)[1] for v, w in zip(values, wrappers, strict=True)]
    return ("org.apache.hudi.avro.model.ArrayWrapper", {"wrappedValues": wrapped})


def _unwrap_ordering_value(wrapped: Any) -> Any:
    """The ordering value of a delete; None for Java's "no ordering value" (null, or an Integer 0: the delete
    wins whatever the ordering, `OrderingValues.isCommitTimeOrderingValue`). A Long 0 is a value like any."""
    if wrapped is None:
        return None
    name, record = wrapped
    if name.endswith(".IntWrapper") and record["value"] == 0:
        return None
    if name.endswith(".ArrayWrapper"):  # several ordering fields: a tuple, an element per field
        return tuple(_unwrap_element(w) for w in record["wrappedValues"] or ())
    return _unwrap_element(wrapped)


def _unwrap_element(wrapped: Any) -> Any:
    if wrapped is None:
        return None
    name, record = wrapped
    if name.endswith((".DateWrapper", ".LocalDateWrapper")):
        return _EPOCH + datetime.timedelta(days=record["value"])
    return record["value"]


# ---------------------------------------------------------------------------------------
# Reading


class _Corrupt(Exception):
    """The bytes at this position are not one complete, consistent block."""


@dataclass(frozen=True)
class LogBlock:
    """One block of a log file. Content stays in `source` until asked for."""

    block_type: BlockType
    header: dict[HeaderKey | int, str]
    footer: dict[HeaderKey | int, str]
    offset: int  # where the block (its magic) starts in the file
    size: int  # bytes the block takes in the file
    source: IO[bytes] = field(repr=False, compare=False)
    content_offset: int = field(repr=False)
    content_length: int = field(repr=False)

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> dict[str, Any] | None:
        """The writer's Avro schema (with meta fields), for blocks that carry one."""
        text = self.header.get(HeaderKey.SCHEMA)
        return parse_avro_schema(text) if text else None

    @property
    def is_partial(self) -> bool:
        """A Hudi 1.1 partial-update data block: its records hold only some of the table's columns."""
        return (self.header.get(HeaderKey.IS_PARTIAL) or "").lower() == "true"

    @property
    def command_type(self) -> CommandType:
        self._expect(BlockType.COMMAND)
        return CommandType(int(self.header[HeaderKey.COMMAND_BLOCK_TYPE]))

    @property
    def is_rollback(self) -> bool:
        return self.block_type == BlockType.COMMAND and self.command_type == CommandType.ROLLBACK

    def content(self) -> bytes:
        self.source.seek(self.content_offset)
        return self.source.read(self.content_length)

    def record_count(self) -> int:
        """Records in a data block, without decoding them."""
        if self.block_type in (BlockType.AVRO_DATA, BlockType.CDC):
            self.source.seek(self.content_offset)
            version, count = _INT_PAIR.unpack(self.source.read(_INT_PAIR.size))
            _check_content_version(version)
            records: int = count
            return records
        self._expect(BlockType.PARQUET_DATA)
        rows: int = self.parquet_file().metadata.num_rows
        return rows

    def records(self) -> pa.Table:
        """The records of a data block."""
        if self.block_type in (BlockType.AVRO_DATA, BlockType.CDC):
            schema = self.schema
            if schema is None:
                raise ValueError(f"{self.block_type.name} block without a schema in its header")
            return _decode_avro_records(self.content(), schema)
        self._expect(BlockType.PARQUET_DATA)
        return pq.read_table(pa.BufferReader(self.content()))

    def avro_records(self) -> list[dict[str, Any]]:
        """The records of an Avro data block as plain dicts of its writer schema (nested records kept)."""
        self._expect(BlockType.AVRO_DATA)
        schema = self.schema
        if schema is None:
            raise ValueError("an Avro data block without a schema")
        stream = io.BytesIO(self.content())
        version, count = _INT_PAIR.unpack(stream.read(_INT_PAIR.size))
        _check_content_version(version)
        parsed = fastavro.parse_schema(schema)
        records = []
        for _ in range(count):
            (length,) = _INT.unpack(stream.read(_INT.size))
            records.append(cast(dict[str, Any], fastavro.schemaless_reader(io.BytesIO(stream.read(length)), parsed)))
        return records

    def record_batches(self, batch_bytes: int) -> Iterator[pa.Table]:
        """The records of a data block in batches of about `batch_bytes` of content, read from the source as they
        are decoded: neither the block's bytes nor its decoded records are held whole (a block can be hundreds of
        MB). The rows, concatenated, are those of `records()`."""
        if self.block_type in (BlockType.AVRO_DATA, BlockType.CDC):
            schema = self.schema
            if schema is None:
                raise ValueError(f"{self.block_type.name} block without a schema in its header")
            for count, body in _avro_bodies(self._content_stream(), max(batch_bytes, 1)):
                yield _decode_avro_bodies(count, body, schema)
            return
        parquet = self.parquet_file()
        meta = parquet.metadata
        row_bytes = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)) / max(meta.num_rows, 1)
        for batch in parquet.iter_batches(batch_size=max(1024, int(batch_bytes / max(row_bytes, 1)))):
            yield pa.Table.from_batches([batch])

    def parquet_file(self) -> pq.ParquetFile:
        """A Parquet data block's content as a Parquet file read from the source on demand, a page at a time."""
        self._expect(BlockType.PARQUET_DATA)
        return pq.ParquetFile(_ContentReader(self.source, self.content_offset, self.content_length),
                              buffer_size=_STREAM_BUFFER, pre_buffer=False)

    def _content_stream(self) -> IO[bytes]:
        return io.BufferedReader(_ContentReader(self.source, self.content_offset, self.content_length),
                                 _STREAM_BUFFER)

    def deleted_keys(self) -> list[tuple[str, str, Any]]:
        """(record key, partition path, ordering value) of each record a delete block deletes; the ordering value
        is None for a delete that wins whatever the ordering (see `_unwrap_ordering_value`)."""
        self._expect(BlockType.DELETE)
        data = self.content()
        version, length = _INT_PAIR.unpack_from(data)
        _check_content_version(version)
        stream = io.BytesIO(data[_INT_PAIR.size : _INT_PAIR.size + length])
        decoded = fastavro.schemaless_reader(stream, _DELETE_RECORD_LIST, return_record_name=True)
        if not isinstance(decoded, dict):
            raise ValueError("a delete block's content is not a record")
        return [
            (r["recordKey"], r["partitionPath"], _unwrap_ordering_value(r["orderingVal"]))
            for r in decoded["deleteRecordList"]
        ]

    def _expect(self, *types: BlockType) -> None:
        if self.block_type not in types:
            raise ValueError(f"not a {'/'.join(t.name for t in types)} block: {self.block_type.name}")


def _check_content_version(version: int) -> None:
    # Hudi writes version 3; delete blocks before it were Java-serialized objects.
    if version != CONTENT_VERSION:
        raise ValueError(f"unsupported log block content version {version}")


def _decode_avro_records(content: bytes, schema: dict[str, Any]) -> pa.Table:
    """Decode the length-prefixed schemaless records of an Avro data block."""
    version, count = _INT_PAIR.unpack_from(content)
    _check_content_version(version)
    view, pos, bodies = memoryview(content), _INT_PAIR.size, []
    for _ in range(count):
        (length,) = _INT.unpack_from(content, pos)
        pos += _INT.size
        bodies.append(view[pos:pos + length])
        pos += length
    return _decode_avro_bodies(count, b"".join(bodies), schema)


def _avro_bodies(stream: IO[bytes], batch_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(count, concatenated record bodies) of an Avro data block's content, batch by batch."""
    version, count = _INT_PAIR.unpack(stream.read(_INT_PAIR.size))
    _check_content_version(version)
    remaining = count
    while remaining:
        bodies, size = [], 0
        while remaining and size < batch_bytes:
            (length,) = _INT.unpack(stream.read(_INT.size))
            body = stream.read(length)
            if len(body) != length:
                raise ValueError("an Avro data block's content ends within a record")
            bodies.append(body)
            size += length
            remaining -= 1
        yield len(bodies), b"".join(bodies)


def _decode_avro_bodies(count: int, body: bytes, schema: dict[str, Any]) -> pa.Table:
    """Decode `count` schemaless records (their bodies concatenated). The bodies are wrapped into one in-memory
    Avro object container. Records of flat primitive fields (the common case) are decoded by polars, natively
    (an order of magnitude faster than fastavro, and without holding the GIL); fastavro decodes the rest
    (nested, logical types), which polars maps incompletely."""
    container = io.BytesIO()
    fastavro.writer(container, fastavro.parse_schema(schema), [], sync_marker=_SYNC)
    container.write(_avro_long(count) + _avro_long(len(body)) + body + _SYNC)
    container.seek(0)
    if _is_flat_primitive(schema):
        import polars  # here: a third of a second that the jobs reading no log records (archival, cleans) skip

        return polars.read_avro(container).to_arrow().cast(avro_to_arrow(schema))
    # fastavro types a record as any Avro value; the container holds records of `schema`
    return records_to_arrow(cast(list[dict[str, Any]], list(fastavro.reader(container))), schema)


_STREAM_BUFFER = 1 << 20  # bytes read from a block's source at a time when it is streamed


class _ContentReader(io.RawIOBase):
    """A block's content as a seekable file of its own, read from the log file's source on demand (the source is
    shared by the file's blocks: every read seeks first)."""

    def __init__(self, source: IO[bytes], offset: int, length: int):
        super().__init__()
        self._source, self._offset, self._length, self._pos = source, offset, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        self._pos = min(max(base + offset, 0), self._length)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        size = min(len(buffer), self._length - self._pos)
        if size <= 0:
            return 0
        self._source.seek(self._offset + self._pos)
        data = self._source.read(size)
        buffer[:len(data)] = data
        self._pos += len(data)
        return len(data)


_PRIMITIVES = {"boolean", "int", "long", "float", "double", "string", "bytes"}


def _is_flat_primitive(schema: dict[str, Any]) -> bool:
    for f in schema["fields"]:
        types = f["type"] if isinstance(f["type"], list) else [f["type"]]
        branches = [t for t in types if t != "null"]
        if len(branches) != 1 or not isinstance(branches[0], str) or branches[0] not in _PRIMITIVES:
            return False
    return True


_SYNC = b"TMS-avro-sync-16"


def _avro_long(n: int) -> bytes:
    """Avro's zig-zag varint encoding of a long."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_log_file(data: bytes | bytearray | memoryview | IO[bytes]) -> list[LogBlock]:
    """The blocks of a log file, in file order. A file-like source must stay open while
    block content is read. Bytes that do not form a complete block (a crashed append, or
    garbage) become one CORRUPT block reaching to the next magic or the end of the file.
    A complete block of an unknown format version or block type raises ValueError."""
    source = io.BytesIO(bytes(data)) if isinstance(data, (bytes, bytearray, memoryview)) else data
    file_size = source.seek(0, io.SEEK_END)
    blocks = []
    position = 0
    while position < file_size:
        try:
            block = _read_block(source, position, file_size)
        except _Corrupt:
            block = _corrupt_block(source, position, file_size)
        blocks.append(block)
        position = block.offset + block.size
    return blocks


def _read_at(source: IO[bytes], offset: int, size: int) -> bytes:
    source.seek(offset)
    data = source.read(size)
    if len(data) != size:
        raise _Corrupt
    return data


class _Cursor:
    """Sequential reads within [position, end) of a block; anything past `end` is corrupt."""

    def __init__(self, source: IO[bytes], position: int, end: int):
        self.source, self.position, self.end = source, position, end

    def take(self, size: int) -> bytes:
        if size < 0 or self.position + size > self.end:
            raise _Corrupt
        data = _read_at(self.source, self.position, size)
        self.position += size
        return data

    def skip(self, size: int) -> None:
        if size < 0 or self.position + size > self.end:
            raise _Corrupt
        self.position += size

    def read_int(self) -> int:
        value: int = _INT.unpack(self.take(_INT.size))[0]
        return value

    def read_long(self) -> int:
        value: int = _LONG.unpack(self.take(_LONG.size))[0]
        return value

    def metadata(self) -> dict[HeaderKey | int, str]:
        entries = {}
        for _ in range(self.read_int()):
            key = self.read_int()
            value = self.take(self.read_int()).decode("utf-8")
            entries[HeaderKey(key) if key in _HEADER_KEYS else key] = value
        return entries


def _read_block(source: IO[bytes], start: int, file_size: int) -> LogBlock:
    if _read_at(source, start, len(MAGIC)) != MAGIC:
        raise _Corrupt
    (length,) = _LONG.unpack(_read_at(source, start + len(MAGIC), _LONG.size))
    end = start + _BLOCK_PREFIX + length
    if length < _LONG.size or end > file_size:
        raise _Corrupt
    # Same checks as HoodieLogFileReader.isBlockCorrupt, so both agree on which blocks
    # count: the trailing size matches the length, and a block (or EOF) follows.
    (trailing_size,) = _LONG.unpack(_read_at(source, end - _LONG.size, _LONG.size))
    if trailing_size != end - start - _LONG.size:
        raise _Corrupt
    source.seek(end)
    if not MAGIC.startswith(source.read(len(MAGIC))):
        raise _Corrupt

    cursor = _Cursor(source, start + _BLOCK_PREFIX, end - _LONG.size)
    version = cursor.read_int()
    if version != LOG_FORMAT_VERSION:
        raise ValueError(f"unsupported log format version {version} in block at {start}")
    block_type = cursor.read_int()
    if block_type not in _BLOCK_TYPES:
        raise ValueError(f"unsupported log block type {block_type} in block at {start}")
    header = cursor.metadata()
    content_length = cursor.read_long()
    content_offset = cursor.position
    cursor.skip(content_length)
    footer = cursor.metadata()
    if cursor.position != cursor.end:
        raise _Corrupt
    return LogBlock(
        BlockType(block_type), header, footer, start, end - start, source, content_offset, content_length
    )


def _corrupt_block(source: IO[bytes], start: int, file_size: int) -> LogBlock:
    end = _find_magic(source, start + 1, file_size)
    return LogBlock(BlockType.CORRUPT, {}, {}, start, end - start, source, start, end - start)


def _find_magic(source: IO[bytes], start: int, file_size: int) -> int:
    """Offset of the next magic at or after `start`, or the file size if there is none."""
    position = start
    while position < file_size:
        source.seek(position)
        chunk = source.read(_SCAN_CHUNK + len(MAGIC) - 1)  # overlap: a magic across chunks
        found = chunk.find(MAGIC)
        if found >= 0:
            return position + found
        position += _SCAN_CHUNK
    return file_size


# ---------------------------------------------------------------------------------------
# Writing: each function returns the bytes of one complete block, to append to a log file.


def _metadata_bytes(entries: dict[HeaderKey, str]) -> bytes:
    parts = [_INT.pack(len(entries))]
    for key, value in entries.items():
        encoded = value.encode("utf-8")
        parts += [_INT.pack(key), _INT.pack(len(encoded)), encoded]
    return b"".join(parts)


def _block_bytes(block_type: BlockType, header: dict[HeaderKey, str], content: bytes) -> bytes:
    body = b"".join(
        [
            _INT.pack(LOG_FORMAT_VERSION),
            _INT.pack(block_type),
            _metadata_bytes(header),
            _LONG.pack(len(content)),
            content,
            _metadata_bytes({}),  # Hudi writes no footers
        ]
    )
    block = MAGIC + _LONG.pack(len(body) + _LONG.size) + body
    return block + _LONG.pack(len(block))


def _data_header(instant_time: str, schema: dict[str, Any]) -> dict[HeaderKey, str]:
    return {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: avro_schema_json(schema)}


def _conform(table: pa.Table, schema: dict[str, Any]) -> pa.Table:
    """The table's columns in schema order and types; every schema field must be present."""
    arrow_schema = avro_to_arrow(schema)
    missing = [name for name in arrow_schema.names if name not in table.column_names]
    if missing:
        raise ValueError(f"table lacks columns of the schema: {missing}")
    return table.select(arrow_schema.names).cast(arrow_schema)


def avro_data_block(table: pa.Table, avro_schema: dict[str, Any] | str, instant_time: str) -> bytes:
    """An Avro data block of the table's rows; the table holds the meta columns too."""
    schema = with_meta_fields(avro_schema)
    parsed = fastavro.parse_schema(schema)
    parts = [_INT.pack(CONTENT_VERSION), _INT.pack(table.num_rows)]
    for record in arrow_to_records(_conform(table, schema)):
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        parts += [_INT.pack(buffer.tell()), buffer.getvalue()]
    return _block_bytes(BlockType.AVRO_DATA, _data_header(instant_time, schema), b"".join(parts))


def avro_records_block(records: list[dict[str, Any]], avro_schema: dict[str, Any]) -> bytes:
    """An Avro data block of plain records of `avro_schema` (no meta fields; the schema its only header), as
    Hudi's archiver of table version 6 writes its HoodieArchivedMetaEntry records."""
    parsed = fastavro.parse_schema(avro_schema)
    parts = [_INT.pack(CONTENT_VERSION), _INT.pack(len(records))]
    for record in records:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        parts += [_INT.pack(buffer.tell()), buffer.getvalue()]
    return _block_bytes(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: avro_schema_json(avro_schema)}, b"".join(parts))


def parquet_data_block(table: pa.Table, avro_schema: dict[str, Any] | str, instant_time: str) -> bytes:
    """A Parquet data block of the table's rows; the table holds the meta columns too."""
    schema = with_meta_fields(avro_schema)
    buffer = io.BytesIO()
    # gzip, as the Spark + Hudi 0.x writer of the fixtures compressed its Parquet blocks.
    pq.write_table(_conform(table, schema), buffer, compression="gzip")
    return _block_bytes(BlockType.PARQUET_DATA, _data_header(instant_time, schema), buffer.getvalue())


def delete_block(
    keys: list[tuple[str, str, Any]],
    instant_time: str,
    ordering_type: Any,
    avro_schema: dict[str, Any] | str | None = None,
) -> bytes:
    """A delete block of (record key, partition path, ordering value) triples.

    `ordering_type` is the Avro type of the table's ordering field (e.g. "long",
    ["null", "long"], {"type": "int", "logicalType": "date"}): readers compare the
    ordering value with the field's values, so its wrapper must match that type; a tuple
    of types for a table of several ordering fields (Hudi 1.1 wraps the values, a tuple
    each, in an ArrayWrapper). An
    ordering value of None deletes whatever the stored record's ordering value; it is
    written as Java writes it, an int 0, and reads back as 0. Hudi's writers also put
    the table schema in the header; pass `avro_schema` to do the same.
    """
    if isinstance(ordering_type, tuple):  # several ordering fields (Hudi 1.1): each value a tuple, one per field
        wrappers = [_ordering_wrapper(t) for t in ordering_type]
        wrap = functools.partial(_wrap_ordering_values, wrappers=wrappers)
    else:
        wrap = functools.partial(_wrap_ordering_value, wrapper=_ordering_wrapper(ordering_type))
    records = [{"recordKey": key, "partitionPath": partition, "orderingVal": wrap(value)}
               for key, partition, value in keys]
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _DELETE_RECORD_LIST, {"deleteRecordList": records})
    content = _INT.pack(CONTENT_VERSION) + _INT.pack(buffer.tell()) + buffer.getvalue()
    header = {HeaderKey.INSTANT_TIME: instant_time}
    if avro_schema is not None:
        header[HeaderKey.SCHEMA] = avro_schema_json(with_meta_fields(avro_schema))
    return _block_bytes(BlockType.DELETE, header, content)


def rollback_command_block(target_instant: str, instant_time: str) -> bytes:
    """A command block telling readers to skip every block written by `target_instant`;
    `instant_time` is the rollback's own instant."""
    header = {
        HeaderKey.INSTANT_TIME: instant_time,
        HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK)),
        HeaderKey.TARGET_INSTANT_TIME: target_instant,
    }
    return _block_bytes(BlockType.COMMAND, header, b"")


# ---------------------------------------------------------------------------------------
# Log file names
