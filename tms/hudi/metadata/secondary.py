"""A secondary index (`secondary_index_<name>`): its definition in the table's index definitions file and its
records, keyed `<secondary key>$<record key>` (`SecondaryIndexKeyUtils`), as Java Hudi builds them.

What differs between the Hudi releases that write tables of version 8 and 9 (index version V1 and V2,
`HoodieIndexVersion.getCurrentVersion`):
- the file group of a key: V1 hashes the whole key, V2 only its escaped secondary-key prefix with the '$'
  (`getSecondaryKeyToFileGroupMappingFunction`): a lookup by secondary key then reads one file group;
- a null value: Hudi 1.0 indexes no record for it, 1.1 a key whose secondary part is the NUL character;
- escaping: 1.1 escapes the NUL character too (1.0 only '\\' and '$');
- the definition: 1.1 records its `version` ("V2"), 1.0 knows no such field.
The value becomes the secondary key as both releases render it (Avro's `String.valueOf`, Spark's `toString`),
which TMS reproduces for string, integer and boolean columns only; other types are refused.
"""
from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..config import table as table_config
from ..errors import HudiError, UnsupportedTableError
from ..table.hudi_table import HudiTable
from . import keys as K
from .records import MetadataRecord, secondary_index_record

INDEX_DEFS_PATH_PROP = table_config.INDEX_DEFS_PATH.key
DEFAULT_INDEX_DEFS_PATH = table_config.INDEX_DEFS_PATH.default
SECONDARY_INDEX_TYPE = "secondary_index"

# `estimateFileGroupCount` as `initializeSecondaryIndexPartition` calls it: the record index's settings
# (hoodie.metadata.record.index.{min,max}.filegroup.count, .growth.factor, .max.filegroup.size) and an
# average record size of 48 bytes.
_MIN_FILE_GROUPS, _MAX_FILE_GROUPS = 10, 10000
_GROWTH_FACTOR, _MAX_FILE_GROUP_BYTES, _AVERAGE_RECORD_BYTES = 2.0, 1024 * 1024 * 1024, 48


@dataclass(frozen=True)
class SecondaryIndex:
    partition: str        # secondary_index_<name>
    column: str
    v2: bool              # index version V2 (table version 9)

    def key(self, value: Any, record_key: str) -> str | None:
        """The index key of a record whose column holds `value`; None if Hudi indexes no such record."""
        if value is None:
            return K.secondary_index_key(None, record_key, escape_nul=self.v2) if self.v2 else None
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if not self.v2 and K.NULL_SECONDARY_KEY in text:
            # Hudi 1.0 leaves NUL unescaped and 1.1 escapes it: on a version-8 table either may maintain the
            # index, so no key is exact.
            raise UnsupportedTableError(f"{self.partition}: a value of {self.column} holds a NUL character; TMS "
                                        "does not index it on a table of version 8")
        return K.secondary_index_key(text, record_key, escape_nul=self.v2)

    def records(self, values: list[Any], record_keys: list[str]) -> list[MetadataRecord]:
        out = []
        for value, rk in zip(values, record_keys, strict=True):
            key = self.key(value, rk)
            if key is not None:
                out.append(secondary_index_record(key, False))
        return out

    def file_group(self, key: str, groups: int) -> int:
        return K.secondary_file_group_index(key, groups, v2=self.v2)


def file_group_count(records: int) -> int:
    """`HoodieTableMetadataUtil.estimateFileGroupCount` for `records` index records."""
    expected = math.ceil(records * _GROWTH_FACTOR)
    per_group = _MAX_FILE_GROUP_BYTES // _AVERAGE_RECORD_BYTES
    estimated = expected // per_group
    return max(_MIN_FILE_GROUPS, min(_MAX_FILE_GROUPS, estimated))


def supported_column_type(arrow_type: pa.DataType) -> bool:
    """Whether TMS renders the column's values as Hudi does (plain strings, integers, booleans: no logical
    type, whose rendering differs between Hudi releases)."""
    return any(check(arrow_type) for check in (pa.types.is_string, pa.types.is_large_string, pa.types.is_boolean,
                                                pa.types.is_int32, pa.types.is_int64))


# --- the index definitions file (HoodieIndexMetadata) --------------------------------------------------------

def index_defs_path(table: HudiTable) -> str:
    """The table-relative path of its index definitions file."""
    path = table_config.INDEX_DEFS_PATH.value(table.config.props)
    if "://" in path or posixpath.isabs(path):
        base = table.base_path.rstrip("/") + "/"
        if not path.startswith(base):
            raise HudiError(f"table {table.config.name}: index definitions at {path}, outside the table")
        path = path[len(base):]
    return path


def read_index_definitions(table: HudiTable) -> dict[str, dict[str, Any]]:
    path = index_defs_path(table)
    if not table.storage.exists(path):
        return {}
    defs: dict[str, dict[str, Any]] = json.loads(table.storage.read_bytes(path)).get("indexDefinitions") or {}
    return defs


def _write_index_definitions(table: HudiTable, defs: dict[str, dict[str, Any]]) -> None:
    table.storage.write_atomic(index_defs_path(table), json.dumps({"indexDefinitions": defs}, indent=2).encode(),
                               overwrite=True)


def secondary_index(table: HudiTable, partition: str) -> SecondaryIndex:
    """The secondary index `partition` as the table defines it."""
    d = read_index_definitions(table).get(partition)
    if d is None or d.get("indexType") != SECONDARY_INDEX_TYPE:
        raise HudiError(f"table {table.config.name} defines no secondary index {partition}")
    fields = d.get("sourceFields") or []
    if len(fields) != 1 or d.get("indexFunction", "identity") != "identity":
        raise UnsupportedTableError(f"secondary index {partition} of table {table.config.name} is not on one "
                                    "column as it is: TMS does not build it")
    return SecondaryIndex(partition, fields[0], table.config.version >= 9)


def define_secondary_index(table: HudiTable, partition: str, column: str) -> None:
    """Add the index's definition, as `CREATE INDEX ... USING secondary_index(column)` registers it; the
    properties' `hoodie.table.index.defs.path` names the file (the caller saves hoodie.properties)."""
    defs = read_index_definitions(table)
    definition: dict[str, Any] = {"indexName": partition, "indexType": SECONDARY_INDEX_TYPE,
                                  "indexFunction": "identity", "sourceFields": [column], "indexOptions": {}}
    if table.config.version >= 9:
        definition["version"] = "V2"
    defs[partition] = definition
    table.config.props.setdefault(INDEX_DEFS_PATH_PROP, DEFAULT_INDEX_DEFS_PATH)
    _write_index_definitions(table, defs)


def undefine_index(table: HudiTable, partition: str) -> None:
    """Remove the definition of `partition`, as Hudi's dropIndex does (nothing if it has none)."""
    defs = read_index_definitions(table)
    if defs.pop(partition, None) is not None:
        _write_index_definitions(table, defs)
