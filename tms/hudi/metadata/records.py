"""`HoodieMetadataRecord`: the records of the metadata table, decoded from and encoded to the Avro
binary Hudi stores as HFile values, and merged as `HoodieMetadataPayload` merges them."""
from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from enum import IntEnum
from functools import lru_cache
from typing import Any

import fastavro
from fastavro.types import Schema

from ..errors import HudiError
from ..timeline.instant import millis_from_instant

NAMESPACE = "org.apache.hudi.avro.model"


class RecordType(IntEnum):
    """`MetadataPartitionType.getRecordType()`."""
    ALL_PARTITIONS = 1
    FILE_LIST = 2
    COLUMN_STATS = 3
    BLOOM_FILTER = 4
    RECORD_INDEX = 5
    PARTITION_STATS = 6
    SECONDARY_INDEX = 7


@lru_cache(maxsize=8)
def parsed_schema(text: str) -> Schema:
    return fastavro.parse_schema(json.loads(text))


@dataclass
class MetadataRecord:
    """One record: its key, type and the Avro fields of its payload (as fastavro gives them, with
    union branches of records as (name, value) tuples)."""
    key: str
    type: RecordType
    fields: dict[str, Any]

    # --- typed views -------------------------------------------------------------------------------
    @property
    def files(self) -> dict[str, FileEntry]:
        return {name: FileEntry(int(info["size"]), bool(info["isDeleted"]))
                for name, info in (self.fields.get("filesystemMetadata") or {}).items()}

    @property
    def column_stats(self) -> dict[str, Any] | None:
        return _branch(self.fields.get("ColumnStatsMetadata"))

    @property
    def bloom_filter(self) -> dict[str, Any] | None:
        return _branch(self.fields.get("BloomFilterMetadata"))

    @property
    def record_index(self) -> dict[str, Any] | None:
        return _branch(self.fields.get("recordIndexMetadata"))

    @property
    def secondary_index(self) -> dict[str, Any] | None:
        return _branch(self.fields.get("SecondaryIndexMetadata"))

    @property
    def is_deleted(self) -> bool:
        """A tombstone of a whole record (column stats, bloom filter, secondary index)."""
        for payload in (self.column_stats, self.bloom_filter, self.secondary_index):
            if payload is not None:
                return bool(payload.get("isDeleted"))
        return False

    @property
    def location(self) -> RecordLocation | None:
        info = self.record_index
        return None if info is None else RecordLocation.from_avro(info)


@dataclass(frozen=True)
class FileEntry:
    size: int
    is_deleted: bool


@dataclass(frozen=True)
class RecordLocation:
    """Where the record index says a record is."""
    partition: str
    file_id: str
    instant_millis: int | None   # the commit time, epoch milliseconds (see millis_from_instant)
    position: int | None

    @classmethod
    def from_avro(cls, info: dict[str, Any]) -> RecordLocation:
        if int(info.get("fileIdEncoding") or 0) == 0:
            hi, lo = info["fileIdHighBits"], info["fileIdLowBits"]
            u = uuid.UUID(int=((hi & 0xFFFFFFFFFFFFFFFF) << 64) | (lo & 0xFFFFFFFFFFFFFFFF))
            file_id = f"{u}-{info['fileIndex']}"
        else:
            file_id = info["fileId"]
        ms = info.get("instantTime")
        return cls(info.get("partitionName") or "", file_id, None if ms is None or ms < 0 else ms,
                   info.get("position"))


def _branch(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    branch = value[1] if isinstance(value, tuple) else value
    if not isinstance(branch, dict):
        raise HudiError(f"MDT record payload is a {type(branch).__name__}, not a record")
    return branch


# --- Avro ------------------------------------------------------------------------------------------

def decode_value(value: bytes, key: str, schema_json: str) -> MetadataRecord:
    """A record from an HFile value. Log blocks leave the payload's `key` empty: the HFile key is it."""
    fields = fastavro.schemaless_reader(io.BytesIO(value), parsed_schema(schema_json),
                                        return_record_name=True, return_record_name_override=True)
    if not isinstance(fields, dict):
        raise HudiError(f"MDT value for key {key!r} is not an Avro record")
    return MetadataRecord(key, RecordType(fields["type"]), fields)


def encode_record(record: MetadataRecord, schema_json: str, *, blank_key: bool) -> bytes:
    """The Avro binary of a record. `blank_key`: as `HoodieHFileDataBlock` writes it (key field
    empty, the HFile key carries it); base files keep it."""
    fields = dict(record.fields)
    fields["key"] = "" if blank_key else record.key
    fields["type"] = int(record.type)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema(schema_json), fields)
    return out.getvalue()


def _empty_fields(key: str, rtype: RecordType) -> dict[str, Any]:
    return {"_hoodie_commit_time": None, "_hoodie_commit_seqno": None, "_hoodie_record_key": None,
            "_hoodie_partition_path": None, "_hoodie_file_name": None, "key": key, "type": int(rtype),
            "filesystemMetadata": None, "BloomFilterMetadata": None, "ColumnStatsMetadata": None,
            "recordIndexMetadata": None, "SecondaryIndexMetadata": None}


# --- constructors ----------------------------------------------------------------------------------

def files_record(key: str, added: dict[str, int] | None = None, deleted: list[str] | tuple[str, ...] = (),
                 *, all_partitions: bool = False) -> MetadataRecord:
    """A files-partition record: `added` file names with sizes, `deleted` file names marked."""
    rtype = RecordType.ALL_PARTITIONS if all_partitions else RecordType.FILE_LIST
    fields = _empty_fields(key, rtype)
    fs = {name: {"size": int(size), "isDeleted": False} for name, size in (added or {}).items()}
    for name in deleted:
        fs[name] = {"size": 0, "isDeleted": True}
    fields["filesystemMetadata"] = fs
    return MetadataRecord(key, rtype, fields)


def column_stats_record(key: str, stats: dict[str, Any], *, partition_stats: bool = False) -> MetadataRecord:
    rtype = RecordType.PARTITION_STATS if partition_stats else RecordType.COLUMN_STATS
    fields = _empty_fields(key, rtype)
    fields["ColumnStatsMetadata"] = (f"{NAMESPACE}.HoodieMetadataColumnStats", stats)
    return MetadataRecord(key, rtype, fields)


def bloom_filter_record(key: str, type_code: str, instant: str, bloom: bytes, deleted: bool) -> MetadataRecord:
    fields = _empty_fields(key, RecordType.BLOOM_FILTER)
    fields["BloomFilterMetadata"] = (f"{NAMESPACE}.HoodieMetadataBloomFilter",
                                     {"type": type_code, "timestamp": instant, "bloomFilter": bloom,
                                      "isDeleted": deleted})
    return MetadataRecord(key, RecordType.BLOOM_FILTER, fields)


# The records of one file slice share their instant: parse its time once.
_instant_millis = lru_cache(maxsize=4096)(millis_from_instant)


def record_index_record(record_key: str, partition: str, file_id: str, instant: str, *, zone: tzinfo,
                        position: int | None = None) -> MetadataRecord:
    """`HoodieMetadataPayload.createRecordIndexUpdate`: a UUID-based file id (`<uuid>-<n>`) is stored
    as its two 64-bit halves and index (encoding 0, fileId ""), any other as a string (encoding 1, the halves
    and index -1). Java's reader parses every one of these fields: none may be null."""
    fields = _empty_fields(record_key, RecordType.RECORD_INDEX)
    info: dict[str, Any] = {"partitionName": partition, "fileIdHighBits": -1, "fileIdLowBits": -1,
                            "fileIndex": -1, "fileId": "", "instantTime": _instant_millis(instant, zone),
                            "fileIdEncoding": 1, "position": position}
    u: uuid.UUID | None
    index: int | None
    try:
        u = uuid.UUID(file_id[:36])
        index = int(file_id[37:]) if file_id[36:37] == "-" else None
    except ValueError:
        u = index = None
    if u is not None and index is not None and len(file_id) > 36:
        def as_signed(v: int) -> int:
            return v - (1 << 64) if v >= 1 << 63 else v
        info.update(fileIdHighBits=as_signed(u.int >> 64), fileIdLowBits=as_signed(u.int & ((1 << 64) - 1)),
                    fileIndex=index, fileIdEncoding=0)
    else:
        info["fileId"] = file_id
    fields["recordIndexMetadata"] = (f"{NAMESPACE}.HoodieRecordIndexInfo", info)
    return MetadataRecord(record_key, RecordType.RECORD_INDEX, fields)


def secondary_index_record(key: str, deleted: bool) -> MetadataRecord:
    fields = _empty_fields(key, RecordType.SECONDARY_INDEX)
    fields["SecondaryIndexMetadata"] = (f"{NAMESPACE}.HoodieSecondaryIndexInfo", {"isDeleted": deleted})
    return MetadataRecord(key, RecordType.SECONDARY_INDEX, fields)


# --- merging (HoodieMetadataPayload.preCombine) ----------------------------------------------------

def merge(older: MetadataRecord, newer: MetadataRecord) -> MetadataRecord:
    """`newer` folded onto `older` (same key)."""
    if newer.type in (RecordType.ALL_PARTITIONS, RecordType.FILE_LIST):
        combined = dict(older.fields.get("filesystemMetadata") or {})
        for name, info in (newer.fields.get("filesystemMetadata") or {}).items():
            old = combined.get(name)
            if old is None:
                combined[name] = info
            elif info["isDeleted"]:
                if old["isDeleted"]:
                    combined[name] = info
                else:
                    del combined[name]     # a tombstone cancels the entry, and itself
            else:
                combined[name] = {"size": max(int(info["size"]), int(old["size"])), "isDeleted": False}
        fields = dict(newer.fields)
        fields["filesystemMetadata"] = combined
        return MetadataRecord(newer.key, newer.type, fields)
    if newer.type in (RecordType.COLUMN_STATS, RecordType.PARTITION_STATS):
        prev, new = older.column_stats, newer.column_stats
        if prev is None or new is None or new.get("isDeleted") or prev.get("isDeleted") \
                or new.get("isTightBound"):
            return newer
        return column_stats_record(newer.key, merge_column_stats(prev, new),
                                   partition_stats=newer.type == RecordType.PARTITION_STATS)
    return newer   # bloom filters, record index, secondary index: the newer record wins


def _unwrap(v: Any) -> Any:
    v = _branch(v)
    return None if v is None else v.get("value")


NULL_VALUE_TYPE = 1  # Hudi 1.1's ValueType.NULL (V1 = 0, BOOLEAN = 2, ..., STRING = 7)


def merge_column_stats(prev: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`HoodieTableMetadataUtil.mergeColumnStatsRecords` (both live, newer not tight-bound)."""
    def pick(a: Any, b: Any, fn: Callable[..., Any]) -> Any:
        vals = [x for x in (a, b) if _unwrap(x) is not None]
        return fn(vals, key=_unwrap) if vals else None
    out = dict(new)
    out["minValue"] = pick(prev.get("minValue"), new.get("minValue"), min)
    out["maxValue"] = pick(prev.get("maxValue"), new.get("maxValue"), max)
    for f in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        out[f] = (prev.get(f) or 0) + (new.get(f) or 0)
    if "valueType" in prev or "valueType" in new:
        # A file where the column has no value (Java's stats of a log file of deletes) says NULL: the merged
        # values have the other side's type (a NULL type over String bounds fails Java's reader).
        typed = [t for t in (new.get("valueType"), prev.get("valueType"))
                 if t and t.get("typeOrdinal") != NULL_VALUE_TYPE]
        out["valueType"] = typed[0] if typed else new.get("valueType", prev.get("valueType"))
    return out
