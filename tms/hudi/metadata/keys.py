"""Names in the metadata table (MDT): its partitions, its file groups and the keys of its records, as
Hudi builds them (`MetadataPartitionType`, `HoodieTableMetadataUtil`, `HashID`)."""
from __future__ import annotations

import base64
import hashlib
import re

import xxhash

METADATA_DIR = ".hoodie/metadata"

FILES = "files"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
RECORD_INDEX = "record_index"
PARTITION_STATS = "partition_stats"
SECONDARY_INDEX_PREFIX = "secondary_index_"
EXPRESSION_INDEX_PREFIX = "expr_index_"
# The partitions TMS keeps valid through every service it runs, whose records it writes and merges as Hudi does
# (besides secondary indexes)
MAINTAINED = frozenset({FILES, COLUMN_STATS, PARTITION_STATS, BLOOM_FILTERS, RECORD_INDEX})

ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED_NAME = "."            # the files-partition key of a non-partitioned table's one partition

# File-group id prefixes (`MetadataPartitionType.getFileIdPrefix`): the file groups are named
# `<prefix>-<index:04d>-0`, e.g. `files-0000-0`.
_FILE_ID_PREFIX = {
    FILES: "files",
    COLUMN_STATS: "col-stats",
    BLOOM_FILTERS: "bloom-filters",
    RECORD_INDEX: "record-index",
    PARTITION_STATS: "partition-stats",
}

# HashID.HASH_SEED: the int 0xdabadaba, which Java sign-extends to the long XXHash64 takes (the keys in
# Hudi-written metadata tables prove it).
_HASH_SEED = 0xDABADABA | 0xFFFFFFFF00000000


def file_id_prefix(partition: str) -> str:
    """`secondary_index_txn_date_idx` -> `secondary-index-txn-date-idx` (Hudi replaces '_' by '-')."""
    return _FILE_ID_PREFIX.get(partition) or partition.replace("_", "-")


def file_group_id(partition: str, index: int) -> str:
    return f"{file_id_prefix(partition)}-{index:04d}-0"


_FILE_GROUP_INDEX = re.compile(r"-(\d{4})-\d+$")


def file_group_index_of(file_id: str) -> int:
    m = _FILE_GROUP_INDEX.search(file_id)
    if m is None:
        raise ValueError(f"{file_id!r} is not a metadata-table file group id")
    return int(m.group(1))


def java_string_hash(s: str) -> int:
    """`String.hashCode()`: over UTF-16 code units, wrapping as a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _java_abs(v: int) -> int:
    return v if v == -(1 << 31) else abs(v)


def _java_rem(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def file_group_index(key: str, num_file_groups: int) -> int:
    """`HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex`: abs(abs(hash) % n), Java arithmetic."""
    if num_file_groups <= 1:
        return 0
    return _java_abs(_java_rem(_java_abs(java_string_hash(key)), num_file_groups))


def partition_identifier(partition_path: str) -> str:
    """The name of a data-table partition inside the MDT ('.' for the non-partitioned table's)."""
    return partition_path or NON_PARTITIONED_NAME


def data_partition_path(identifier: str) -> str:
    return "" if identifier == NON_PARTITIONED_NAME else identifier


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def column_id(column: str) -> str:
    """`ColumnIndexID.asBase64EncodedString()`: XXHash64 (seed (long) 0xdabadaba), big-endian, base64."""
    return _b64(xxhash.xxh64(column.encode(), seed=_HASH_SEED).digest())


def partition_id(partition_path: str) -> str:
    return _b64(xxhash.xxh64(partition_identifier(partition_path).encode(), seed=_HASH_SEED).digest())


def file_id_hash(file_name: str) -> str:
    """`FileIndexID.asBase64EncodedString()`: MD5 of the file's name, base64."""
    return _b64(hashlib.md5(file_name.encode()).digest())


def column_stats_key(partition_path: str, file_name: str, column: str) -> str:
    return column_id(column) + partition_id(partition_path) + file_id_hash(file_name)


def partition_stats_key(partition_path: str, column: str) -> str:
    return column_id(column) + partition_id(partition_path)


def bloom_filter_key(partition_path: str, file_name: str) -> str:
    return partition_id(partition_path) + file_id_hash(file_name)


SECONDARY_KEY_SEPARATOR = "$"
NULL_SECONDARY_KEY = "\x00"
_ESCAPE = "\\"


def _escape(s: str, escape_nul: bool) -> str:
    out = s.replace(_ESCAPE, _ESCAPE * 2).replace(SECONDARY_KEY_SEPARATOR, _ESCAPE + SECONDARY_KEY_SEPARATOR)
    return out.replace(NULL_SECONDARY_KEY, _ESCAPE + NULL_SECONDARY_KEY) if escape_nul else out


def secondary_index_key(secondary_key: str | None, record_key: str, *, escape_nul: bool = False) -> str:
    """`SecondaryIndexKeyUtils.constructSecondaryIndexKey`: escaped secondary key, '$', escaped record
    key (a null secondary key is written as the NUL character). `escape_nul`: Hudi 1.1 escapes NUL too."""
    sec = NULL_SECONDARY_KEY if secondary_key is None else _escape(secondary_key, escape_nul)
    return sec + SECONDARY_KEY_SEPARATOR + _escape(record_key, escape_nul)


def secondary_file_group_index(key: str, num_file_groups: int, *, v2: bool) -> int:
    """The file group of secondary-index key `key`: by the whole key (index version V1, table version 8), by its
    escaped secondary-key prefix up to and with the '$' (V2, table version 9)."""
    if not v2:
        return file_group_index(key, num_file_groups)
    i = 0
    while key[i] != SECONDARY_KEY_SEPARATOR:
        i += 2 if key[i] == _ESCAPE else 1
    return file_group_index(key[:i + 1], num_file_groups)


def split_secondary_index_key(key: str) -> tuple[str | None, str]:
    """(secondary key, record key) of a secondary-index key."""
    i = 0
    while i < len(key):
        if key[i] == _ESCAPE:
            i += 2
            continue
        if key[i] == SECONDARY_KEY_SEPARATOR:
            break
        i += 1
    sec_raw, rec_raw = key[:i], key[i + 1:]

    def unescape(s: str) -> str:
        out, j = [], 0
        while j < len(s):
            if s[j] == _ESCAPE and j + 1 < len(s):
                out.append(s[j + 1])
                j += 2
            else:
                out.append(s[j])
                j += 1
        return "".join(out)
    return (None if sec_raw == NULL_SECONDARY_KEY else unescape(sec_raw)), unescape(rec_raw)
