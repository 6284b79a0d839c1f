"""Partition paths of records, as Hudi's key generators write them (the writer's side; readers find
partitions from the folders, see `partitions`): simple and complex key generators join the fields' values
with '/', hive style prefixes each with `field=`, `hoodie.datasource.write.partitionpath.urlencode` escapes
each value as Hive does, and the time-based key generator formats one timestamp field with its output date
format, which may itself hold '/' and so span several folder levels (`2024/01/15/10`)."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa

from ..config import table as table_config
from ..errors import HudiError
from ..table.properties import TableConfig

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
TIMESTAMP_KEYGEN_CLASS = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
TIMESTAMP_TYPE = table_config.TIMESTAMP_TYPE.key
OUTPUT_DATE_FORMAT = table_config.TIMESTAMP_OUTPUT_DATE_FORMAT.key
TIMEZONE = table_config.TIMESTAMP_TIMEZONE.key
URLENCODE = table_config.PARTITION_PATH_URLENCODE.key

# Hive's FileUtils.escapePathName, which Hudi's PartitionPathEncodeUtils copies: these become %XX.
_ESCAPED = set(map(chr, range(0x01, 0x20))) | set('"#%\'*/:=?\\\x7f{[]^')
# Java date pattern letters -> strftime (the ones time-based partitioning uses).
_JAVA_TO_STRFTIME = (("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S"))


def escape_path_name(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def is_time_based(config: TableConfig) -> bool:
    keygen = table_config.KEY_GENERATOR.value(config.props)
    return keygen in (TIMESTAMP_KEYGEN_CLASS, "TIMESTAMP")


def _strftime_pattern(java_pattern: str) -> str:
    out = java_pattern
    for java, py in _JAVA_TO_STRFTIME:
        out = out.replace(java, py)
    return out


def _time_values(config: TableConfig, column: pa.ChunkedArray) -> list[str | None]:
    """Values of the time-based key generator's one field, formatted with its output date format (UTC)."""
    kind = table_config.TIMESTAMP_TYPE.value(config.props).upper()
    pattern = _strftime_pattern(table_config.TIMESTAMP_OUTPUT_DATE_FORMAT.value(config.props))
    if table_config.TIMESTAMP_TIMEZONE.value(config.props).upper() not in ("UTC", "GMT"):
        zone = table_config.TIMESTAMP_TIMEZONE.raw(config.props)
        raise HudiError(f"the writer formats time-based partitions in UTC only, not {zone}")
    scale = {"EPOCHMILLISECONDS": 1000, "UNIX_TIMESTAMP": 1, "SCALAR": 1}.get(kind)
    out: list[str | None] = []
    for v in column.to_pylist():
        if v is None:
            out.append(None)
        elif isinstance(v, dt.datetime):
            out.append((v if v.tzinfo else v.replace(tzinfo=dt.UTC)).strftime(pattern))
        elif scale is not None and isinstance(v, (int, float)):
            out.append(dt.datetime.fromtimestamp(v / scale, dt.UTC).strftime(pattern))
        else:
            raise HudiError(f"time-based partition value {v!r} is not a {kind} timestamp")
    return out


def record_partition_paths(config: TableConfig, records: pa.Table) -> pa.Array:
    """The partition path of each record ('' for a non-partitioned table)."""
    fields = config.partition_fields
    if not fields:
        return pa.array([""] * records.num_rows, pa.string())
    if is_time_based(config) and len(fields) != 1:
        raise HudiError("the time-based key generator takes one partition field")
    encode = table_config.PARTITION_PATH_URLENCODE.value(config.props)
    hive = config.hive_style_partitioning
    parts = []
    for f in fields:
        if f not in records.column_names:
            raise HudiError(f"records lack the partition field {f!r}")
        column = records.column(f)
        values = _time_values(config, column) if is_time_based(config) else column.cast(pa.string()).to_pylist()
        values = [DEFAULT_PARTITION if v is None or v == "" else (escape_path_name(v) if encode else v)
                  for v in values]
        parts.append([f"{f}={v}" for v in values] if hive else values)
    return pa.array(["/".join(p) for p in zip(*parts, strict=True)], pa.string())


def partition_time(config: TableConfig, partition: str) -> dt.datetime | None:
    """The time a time-based partition's path stands for (UTC), parsed with the table's output date format;
    None for a table not partitioned by time, or a path that does not parse with that format."""
    if not is_time_based(config) or not partition:
        return None
    value = partition
    if config.hive_style_partitioning:  # `field=2024/01/15`: the format's '/' stay in the value
        field = config.partition_fields[0]
        if not value.startswith(f"{field}="):
            return None
        value = value[len(field) + 1:]
    try:
        pattern = _strftime_pattern(table_config.TIMESTAMP_OUTPUT_DATE_FORMAT.value(config.props))
        parsed = dt.datetime.strptime(value, pattern)
    except ValueError:
        return None
    return parsed.replace(tzinfo=dt.UTC)
