"""The HFile format (v3) as Hudi writes it for metadata-table base files and for the contents of
`HoodieHFileDataBlock`s in metadata-table log files.

Reading accepts both writers Hudi has used: HBase's (Hudi <= 1.0: CRC32C checksums, bloom-filter meta
blocks, Hadoop var-longs) and Hudi's own `hudi-io` `HFileWriterImpl` (Hudi >= 1.1: NULL checksums,
protobuf var-ints). Writing follows `HFileWriterImpl` byte for byte: GZ-compressed blocks of at most
64 KiB of uncompressed key-values, one root index level, a meta index, a file-info block whose entries
come in `java.util.HashMap` iteration order, and a 4096-byte trailer.

A key is stored HBase-style: `int keyLen, int valueLen, short rowLen, row, byte familyLen(0),
long timestamp(Long.MAX_VALUE), byte type(4 = Put), value, byte mvcc(0)`; Hudi's keys are the rows.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from ..errors import HudiError

BLOCK_HEADER_SIZE = 33
TRAILER_SIZE = 4096
BYTES_PER_CHECKSUM = 16 * 1024
DEFAULT_BLOCK_SIZE = 64 * 1024
LATEST_TIMESTAMP = (1 << 63) - 1
KEY_TYPE_PUT = 4
COMPARATOR_CLASS_NAME = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

MAGIC_DATA = b"DATABLK*"
MAGIC_META = b"METABLKc"
MAGIC_ROOT_INDEX = b"IDXROOT2"
MAGIC_LEAF_INDEX = b"IDXLEAF2"
MAGIC_INTERMEDIATE_INDEX = b"IDXINTE2"
MAGIC_FILE_INFO = b"FILEINF2"
MAGIC_TRAILER = b"TRABLK\"$"
PB_MAGIC = b"PBUF"

# HBase's Compression.Algorithm ids as stored in the trailer.
CODEC_GZ = 1
CODEC_NONE = 2

# File-info keys.
LAST_KEY = "hfile.LASTKEY"
MAX_MVCC_TS_KEY = "MAX_MEMSTORE_TS_KEY"
AVG_KEY_LEN = "hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = "hfile.AVG_VALUE_LEN"
FILE_CREATION_TIME_TS = "hfile.CREATE_TIME_TS"
KEY_VALUE_VERSION = "KEY_VALUE_VERSION"


class HFileError(HudiError):
    """A file that is not a readable HFile."""


# --- varints ---------------------------------------------------------------------------------------

def _pb_varint(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF   # a negative int64 is written as its 64-bit two's complement
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_pb_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise HFileError("truncated protobuf varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _hadoop_vlong(value: int) -> bytes:
    """Hadoop `WritableUtils.writeVLong` (non-negative values). Hudi 1.1's writer puts a protobuf var-int
    in the index blocks, which is the same bytes below 128 but unreadable by every HFile reader (Hudi's
    own included) above: TMS writes what the readers read."""
    if value < 128:
        return bytes([value])
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return struct.pack(">b", -112 - len(raw)) + raw


def _read_hadoop_vlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Hadoop `WritableUtils.readVLong` (what HBase's index blocks and Hudi's reader use)."""
    first = struct.unpack_from(">b", buf, pos)[0]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = 0
    for i in range(1, size):
        value = (value << 8) | buf[pos + i]
    return (~value if negative else value), pos + size


# --- a tiny protobuf codec for the two messages of the format ---------------------------------------

# TrailerProto field numbers and wire types (0 = varint, 2 = bytes).
_TRAILER_FIELDS = {
    1: "file_info_offset", 2: "load_on_open_data_offset", 3: "uncompressed_data_index_size",
    4: "total_uncompressed_bytes", 5: "data_index_count", 6: "meta_index_count", 7: "entry_count",
    8: "num_data_index_levels", 9: "first_data_block_offset", 10: "last_data_block_offset",
    11: "comparator_class_name", 12: "compression_codec", 13: "encryption_key",
}
_TRAILER_NUMBERS = {name: num for num, name in _TRAILER_FIELDS.items()}


def _parse_pb(buf: bytes) -> list[tuple[int, int | bytes]]:
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    value: int | bytes
    while pos < len(buf):
        tag, pos = _read_pb_varint(buf, pos)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _read_pb_varint(buf, pos)
        elif wire == 2:
            size, pos = _read_pb_varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise HFileError(f"unsupported protobuf wire type {wire}")
        fields.append((num, value))
    return fields


def _pb_field(num: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _pb_varint(num << 3) + _pb_varint(value)
    return _pb_varint((num << 3) | 2) + _pb_varint(len(value)) + value


def _pb_bytes(value: int | bytes) -> bytes:
    """A length-delimited protobuf field's value (a varint where bytes belong is a malformed file)."""
    if not isinstance(value, bytes):
        raise HFileError(f"protobuf field holds a varint ({value}) where bytes are expected")
    return value


@dataclass
class Trailer:
    file_info_offset: int = 0
    load_on_open_data_offset: int = 0
    uncompressed_data_index_size: int = 0
    total_uncompressed_bytes: int | None = None
    data_index_count: int = 0
    meta_index_count: int = 0
    entry_count: int = 0
    num_data_index_levels: int = 1
    first_data_block_offset: int = 0
    last_data_block_offset: int = 0
    comparator_class_name: str = COMPARATOR_CLASS_NAME
    compression_codec: int = CODEC_GZ
    encryption_key: bytes | None = None
    major_version: int = 3

    @classmethod
    def parse(cls, raw: bytes) -> Trailer:
        if raw[:8] != MAGIC_TRAILER:
            raise HFileError("no HFile trailer magic at the end of the file")
        version = struct.unpack_from(">I", raw, TRAILER_SIZE - 4)[0]
        major = version & 0x00FFFFFF
        if major != 3:
            raise HFileError(f"HFile major version {major} is not supported (only 3)")
        size, pos = _read_pb_varint(raw, 8)
        t = cls(total_uncompressed_bytes=None)
        for num, value in _parse_pb(raw[pos:pos + size]):
            name = _TRAILER_FIELDS.get(num)
            if name == "comparator_class_name":
                setattr(t, name, _pb_bytes(value).decode())
            elif name:
                setattr(t, name, value)
        t.major_version = major
        return t

    def to_bytes(self) -> bytes:
        # Field order of HFileProtos.TrailerProto (ascending numbers); unset optionals omitted.
        body = b"".join(_pb_field(_TRAILER_NUMBERS[name], getattr(self, name).encode()
                                  if name == "comparator_class_name" else getattr(self, name))
                        for num, name in sorted(_TRAILER_FIELDS.items())
                        if getattr(self, name) is not None)
        raw = bytearray(TRAILER_SIZE)
        head = MAGIC_TRAILER + _pb_varint(len(body)) + body
        raw[:len(head)] = head
        raw[TRAILER_SIZE - 1] = self.major_version
        return bytes(raw)


# --- compression -----------------------------------------------------------------------------------

def _gzip(data: bytes) -> bytes:
    """gzip as `java.util.zip.GZIPOutputStream` writes it (mtime 0, no extra flags, OS 0)."""
    comp = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    body = comp.compress(data) + comp.flush()
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00" + body
            + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF))


def _decompress(codec: int, data: bytes, size: int) -> bytes:
    if codec == CODEC_NONE:
        return data
    if codec == CODEC_GZ:
        out = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(data)
        if len(out) != size:
            raise HFileError(f"HFile block decompressed to {len(out)} bytes, header says {size}")
        return out
    raise HFileError(f"HFile compression codec {codec} is not supported (GZ and NONE are)")


# --- blocks ----------------------------------------------------------------------------------------

@dataclass
class Block:
    magic: bytes
    data: bytes            # uncompressed payload, without header or checksums
    on_disk_size: int      # header + payload + checksums


def _checksum_bytes(size_with_header: int) -> int:
    return -(-size_with_header // BYTES_PER_CHECKSUM) * 4


def _read_block(buf: bytes, offset: int, codec: int) -> Block:
    if offset + BLOCK_HEADER_SIZE > len(buf):
        raise HFileError(f"HFile block at {offset} lies past the end of the file")
    magic = buf[offset:offset + 8]
    on_disk_wo_header, uncompressed_size, _prev = struct.unpack_from(">iiq", buf, offset + 8)
    _ctype, _bpc, on_disk_data_with_header = struct.unpack_from(">bii", buf, offset + 24)
    start = offset + BLOCK_HEADER_SIZE
    payload = buf[start:offset + on_disk_data_with_header]
    # Every block is compressed with the file's codec (the load-on-open ones too).
    data = _decompress(codec, payload, uncompressed_size)
    return Block(magic, data, BLOCK_HEADER_SIZE + on_disk_wo_header)


def _block_bytes(magic: bytes, payload: bytes, codec: int, prev_offset: int = -1) -> bytes:
    compressed = _gzip(payload) if codec == CODEC_GZ else payload
    with_header = BLOCK_HEADER_SIZE + len(compressed)
    checksums = _checksum_bytes(with_header)
    header = magic + struct.pack(">iiqbii", len(compressed) + checksums, len(payload), prev_offset,
                                 0, BYTES_PER_CHECKSUM, with_header)
    return header + compressed + bytes(checksums)


# --- keys and values -------------------------------------------------------------------------------

def _data_entries(data: bytes) -> list[tuple[bytes, bytes]]:
    out, pos, end = [], 0, len(data)
    while pos < end:
        key_len, value_len = struct.unpack_from(">ii", data, pos)
        pos += 8
        row_len = struct.unpack_from(">H", data, pos)[0]
        row = data[pos + 2:pos + 2 + row_len]
        pos += key_len
        out.append((row, data[pos:pos + value_len]))
        pos += value_len + 1   # the MVCC var-long, always 0 (one byte) in Hudi's files
    return out


def _data_payload(entries: list[tuple[bytes, bytes]]) -> bytes:
    parts = []
    for key, value in entries:
        parts.append(struct.pack(">iiH", len(key) + 12, len(value), len(key)) + key
                     + struct.pack(">bqb", 0, LATEST_TIMESTAMP, KEY_TYPE_PUT) + value + b"\x00")
    return b"".join(parts)


def _index_entries(data: bytes, count: int, key_has_row_len: bool) -> list[tuple[int, int, bytes]]:
    out, pos = [], 0
    for _ in range(count):
        offset, size = struct.unpack_from(">qi", data, pos)
        key_len, pos = _read_hadoop_vlong(data, pos + 12)
        key = data[pos:pos + key_len]
        pos += key_len
        if key_has_row_len:
            key = key[2:2 + struct.unpack_from(">H", key, 0)[0]]
        out.append((offset, size, key))
    return out


# --- file info: entries in java.util.HashMap<String, byte[]> iteration order ------------------------

def _java_string_hash(s: str) -> int:
    """`String.hashCode()` (over UTF-16 code units), as an unsigned 32-bit value."""
    units = s.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def _hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a `HashMap` into which `keys` were put in this order (default capacity
    16, load factor 0.75: buckets by spread hash, insertion order within a bucket, which resizing
    keeps)."""
    capacity = 16
    while len(keys) > capacity * 0.75:
        capacity *= 2

    def bucket(k: str) -> int:
        h = _java_string_hash(k)
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(keys, key=lambda k: (bucket(k), keys.index(k)))


def _file_info_payload(info: dict[str, bytes]) -> bytes:
    body = b"".join(_pb_field(1, _pb_field(1, k.encode()) + _pb_field(2, info[k]))
                    for k in _hashmap_order(list(info)))
    return PB_MAGIC + _pb_varint(len(body)) + body


def _parse_file_info(data: bytes) -> dict[str, bytes]:
    if data[:4] != PB_MAGIC:
        raise HFileError("HFile file-info block has no PBUF magic")
    size, pos = _read_pb_varint(data, 4)
    out: dict[str, bytes] = {}
    for num, entry in _parse_pb(data[pos:pos + size]):
        if num == 1:
            pair = dict(_parse_pb(_pb_bytes(entry)))
            out[_pb_bytes(pair.get(1, b"")).decode()] = _pb_bytes(pair.get(2, b""))
    return out


# --- reader ----------------------------------------------------------------------------------------

@dataclass
class HFile:
    """A whole HFile in memory: its key-values in file (= key) order, file info and meta blocks."""
    entries: list[tuple[bytes, bytes]]
    file_info: dict[str, bytes]
    meta: dict[str, bytes] = field(default_factory=dict)
    trailer: Trailer | None = None

    def keys(self) -> list[str]:
        return [k.decode() for k, _ in self.entries]

    def items(self) -> list[tuple[str, bytes]]:
        return [(k.decode(), v) for k, v in self.entries]


def read_hfile(buf: bytes) -> HFile:
    if len(buf) < TRAILER_SIZE:
        raise HFileError(f"{len(buf)} bytes are too few for an HFile (the trailer alone is {TRAILER_SIZE})")
    buf = bytes(buf)
    trailer = Trailer.parse(buf[-TRAILER_SIZE:])
    if trailer.num_data_index_levels != 1:
        raise HFileError(f"HFile with {trailer.num_data_index_levels} index levels is not supported")
    codec = trailer.compression_codec
    root = _read_block(buf, trailer.load_on_open_data_offset, codec)
    if root.magic != MAGIC_ROOT_INDEX:
        raise HFileError(f"expected the root index at {trailer.load_on_open_data_offset}, found {root.magic!r}")
    data_index = _index_entries(root.data, trailer.data_index_count, key_has_row_len=True)
    meta_offset = trailer.load_on_open_data_offset + root.on_disk_size
    meta_index_block = _read_block(buf, meta_offset, codec)
    meta_index = _index_entries(meta_index_block.data, trailer.meta_index_count, key_has_row_len=False)
    info_block = _read_block(buf, trailer.file_info_offset, codec)
    if info_block.magic != MAGIC_FILE_INFO:
        raise HFileError(f"expected the file info at {trailer.file_info_offset}, found {info_block.magic!r}")
    entries: list[tuple[bytes, bytes]] = []
    for offset, _size, _first in data_index:
        block = _read_block(buf, offset, codec)
        if block.magic != MAGIC_DATA:
            raise HFileError(f"expected a data block at {offset}, found {block.magic!r}")
        entries.extend(_data_entries(block.data))
    if len(entries) != trailer.entry_count:
        raise HFileError(f"HFile holds {len(entries)} entries, its trailer says {trailer.entry_count}")
    meta = {}
    for offset, _size, name in meta_index:
        meta[name.decode()] = _read_block(buf, offset, codec).data
    return HFile(entries, _parse_file_info(info_block.data), meta, trailer)


# --- writer ----------------------------------------------------------------------------------------

def write_hfile(entries: list[tuple[str, bytes]] | dict[str, bytes], *, file_info: dict[str, bytes] | None = None,
                meta: dict[str, bytes] | None = None, create_time_ms: int = 0,
                block_size: int = DEFAULT_BLOCK_SIZE, codec: int = CODEC_GZ) -> bytes:
    """An HFile of `entries` sorted by key (as `HoodieHFileDataBlock` and `HoodieAvroHFileWriter` sort
    them), laid out as `HFileWriterImpl` lays it out. `file_info` entries are added before the writer's
    own (`hfile.LASTKEY`, averages, creation time); `meta` values become one meta block each."""
    items = sorted(((k.encode() if isinstance(k, str) else k, v)
                    for k, v in (entries.items() if isinstance(entries, dict) else entries)),
                   key=lambda kv: kv[0])
    out = bytearray()
    index: list[tuple[int, int, bytes]] = []
    block: list[tuple[bytes, bytes]] = []
    used = 0
    prev_offset = -1
    first_offset, last_offset = -1, 0
    total_uncompressed = 0

    def flush() -> None:
        nonlocal block, used, prev_offset, first_offset, last_offset
        if not block:
            return
        offset = len(out)
        if first_offset < 0:
            first_offset = offset
        last_offset = offset
        raw = _block_bytes(MAGIC_DATA, _data_payload(block), codec, prev_offset)
        out.extend(raw)
        index.append((offset, len(raw), block[0][0]))
        # HFileWriterImpl opens the next data block with the offset the file has reached.
        prev_offset = len(out)
        block, used = [], 0

    for key, value in items:
        # What Hudi 1.1's writer counts per entry: the key as stored (row + 12 bytes of HBase key
        # fields), the value, and 9 bytes of lengths and MVCC.
        size = len(key) + 12 + len(value) + 9
        # Records with the same key stay in one block.
        if (not block or block[-1][0] != key) and used + size > block_size:
            flush()
        block.append((key, value))
        used += size
        total_uncompressed += size
    flush()

    meta_index: list[tuple[int, int, bytes]] = []
    # HFileWriterImpl keeps meta info in a HashMap too.
    for name in _hashmap_order(list(meta or {})):
        offset = len(out)
        raw = _block_bytes(MAGIC_META, (meta or {})[name], codec)
        out.extend(raw)
        meta_index.append((offset, len(raw), name.encode()))

    load_on_open = len(out)
    root_payload = b"".join(struct.pack(">qi", o, s) + _hadoop_vlong(len(k) + 2) + struct.pack(">H", len(k)) + k
                            for o, s, k in index)
    out.extend(_block_bytes(MAGIC_ROOT_INDEX, root_payload, codec))
    meta_payload = b"".join(struct.pack(">qi", o, s) + _hadoop_vlong(len(k)) + k for o, s, k in meta_index)
    out.extend(_block_bytes(MAGIC_ROOT_INDEX, meta_payload, codec))

    n = len(items)
    last_key = items[-1][0] if items else b""
    info: dict[str, bytes] = {MAX_MVCC_TS_KEY: struct.pack(">q", 0)}
    info.update(file_info or {})
    info[LAST_KEY] = struct.pack(">H", len(last_key)) + last_key if last_key else b""
    info[AVG_KEY_LEN] = struct.pack(">i", sum(len(k) for k, _ in items) // n if n else 0)
    info[FILE_CREATION_TIME_TS] = struct.pack(">q", create_time_ms)
    info[AVG_VALUE_LEN] = struct.pack(">i", sum(len(v) for _, v in items) // n if n else 0)
    info.setdefault(KEY_VALUE_VERSION, struct.pack(">i", 1))
    file_info_offset = len(out)
    out.extend(_block_bytes(MAGIC_FILE_INFO, _file_info_payload(info), codec))

    trailer = Trailer(
        file_info_offset=file_info_offset, load_on_open_data_offset=load_on_open,
        uncompressed_data_index_size=total_uncompressed, data_index_count=len(index),
        meta_index_count=len(meta_index), entry_count=n, num_data_index_levels=1,
        first_data_block_offset=first_offset, last_data_block_offset=last_offset,
        comparator_class_name=COMPARATOR_CLASS_NAME, compression_codec=codec)
    out.extend(trailer.to_bytes())
    return bytes(out)
