"""Avro <-> Arrow schema conversion, the way Spark + Hudi write schemas.

Hudi keeps schemas as Avro JSON: in commit metadata (`extraMetadata.schema`), in
`hoodie.table.create.schema` and in the SCHEMA header of every log data block. Data is
read and written as Arrow. This module converts between the two and between Arrow
tables and the Python values fastavro reads and writes.

Spark's conventions (AvroConversionUtils.convertStructTypeToAvroSchema): the top-level
record is `<table>_record` in namespace `hoodie.<table>`; a nullable field is
`["null", T]` with `"default": null`; a nested record is named after its field, in the
namespace of the enclosing record's full name; a decimal is a `fixed` named "fixed" in
the namespace `<record full name>.<field>`, just wide enough for its precision.
Readers must also accept `[T, "null"]`, which is what `hoodie.table.create.schema` holds.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

_AVRO_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

# Avro logical types on int/long, keyed by (logicalType, underlying type).
_AVRO_LOGICAL = {
    ("date", "int"): pa.date32(),
    ("timestamp-millis", "long"): pa.timestamp("ms", tz="UTC"),
    ("timestamp-micros", "long"): pa.timestamp("us", tz="UTC"),
    ("local-timestamp-millis", "long"): pa.timestamp("ms"),
    ("local-timestamp-micros", "long"): pa.timestamp("us"),
}

_MAX_DECIMAL128_PRECISION = 38


def parse_avro_schema(schema: dict[str, Any] | str) -> dict[str, Any]:
    """The schema as a dict, whether given as a dict or as its JSON text."""
    return json.loads(schema) if isinstance(schema, str) else schema


def avro_schema_json(schema: dict[str, Any] | str) -> str:
    """Compact JSON, as Java's Schema.toString() writes it."""
    return json.dumps(parse_avro_schema(schema), separators=(",", ":"))


# ---------------------------------------------------------------------------------------
# Avro -> Arrow


def avro_to_arrow(avro_schema: dict[str, Any] | str) -> pa.Schema:
    """The Arrow schema of an Avro record schema."""
    record = parse_avro_schema(avro_schema)
    return pa.schema([_arrow_field(f["name"], f["type"]) for f in record["fields"]])


def _arrow_field(name: str, avro_type: Any) -> pa.Field:
    inner, nullable = _strip_null(avro_type)
    return pa.field(name, _arrow_type(inner), nullable=nullable)


def _strip_null(avro_type: Any) -> tuple[Any, bool]:
    """(the non-null branch, whether null is allowed) of a type or a nullable union."""
    if not isinstance(avro_type, list):
        return avro_type, False
    branches = [t for t in avro_type if t != "null"]
    if len(branches) != 1:
        raise ValueError(f"unsupported Avro union (only [null, T] is): {avro_type}")
    return branches[0], len(branches) < len(avro_type)


def _arrow_type(avro_type: Any) -> pa.DataType:
    if isinstance(avro_type, str):
        if avro_type not in _AVRO_PRIMITIVES:
            raise ValueError(f"unsupported Avro type: {avro_type!r}")
        return _AVRO_PRIMITIVES[avro_type]
    kind = avro_type["type"]
    logical = avro_type.get("logicalType")
    if kind == "record":
        return pa.struct([_arrow_field(f["name"], f["type"]) for f in avro_type["fields"]])
    if kind == "array":
        return pa.list_(_arrow_field("element", avro_type["items"]))
    if kind == "map":
        return pa.map_(pa.string(), _arrow_field("value", avro_type["values"]))
    if kind == "enum":
        return pa.string()
    if logical == "decimal" and kind in ("fixed", "bytes"):
        return _arrow_decimal(avro_type["precision"], avro_type.get("scale", 0))
    if kind == "fixed":
        return pa.binary(avro_type["size"])
    if (logical, kind) in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[(logical, kind)]
    # Logical types Spark never writes (uuid, time-*) read as their underlying type.
    return _arrow_type(kind)


def _arrow_decimal(precision: int, scale: int) -> pa.DataType:
    if precision <= _MAX_DECIMAL128_PRECISION:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


# ---------------------------------------------------------------------------------------
# Arrow -> Avro


def arrow_to_avro(arrow_schema: pa.Schema, table_name: str) -> dict[str, Any]:
    """The Avro schema Spark + Hudi would write for a table with this Arrow schema."""
    return _avro_record(list(arrow_schema), f"{table_name}_record", f"hoodie.{table_name}")


def _avro_record(fields: list[pa.Field], name: str, namespace: str) -> dict[str, Any]:
    full_name = f"{namespace}.{name}"
    return {
        "type": "record",
        "name": name,
        "namespace": namespace,
        "fields": [_avro_field(f, full_name) for f in fields],
    }


def _avro_field(field: pa.Field, record_full_name: str) -> dict[str, Any]:
    avro_type = _avro_type(field.type, field.name, record_full_name)
    if not field.nullable:
        return {"name": field.name, "type": avro_type}
    return {"name": field.name, "type": ["null", avro_type], "default": None}


def _nullable(avro_type: Any, nullable: bool) -> Any:
    return ["null", avro_type] if nullable else avro_type


def _avro_type(arrow_type: pa.DataType, name: str, namespace: str) -> Any:
    """`name` is the field's name and `namespace` the enclosing record's full name:
    Spark names nested records and decimal fixeds after them."""
    if pa.types.is_struct(arrow_type):
        return _avro_record(list(arrow_type), name, namespace)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = arrow_type.value_field
        return {"type": "array", "items": _nullable(_avro_type(item.type, name, namespace), item.nullable)}
    if pa.types.is_map(arrow_type):
        if not pa.types.is_string(arrow_type.key_type):
            raise ValueError(f"Avro map keys are strings, not {arrow_type.key_type}")
        item = arrow_type.item_field
        return {"type": "map", "values": _nullable(_avro_type(item.type, name, namespace), item.nullable)}
    if pa.types.is_decimal(arrow_type):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": _decimal_fixed_size(arrow_type.precision),
            "logicalType": "decimal",
            "precision": arrow_type.precision,
            "scale": arrow_type.scale,
        }
    if pa.types.is_fixed_size_binary(arrow_type):
        return {"type": "fixed", "name": name, "namespace": namespace, "size": arrow_type.byte_width}
    if pa.types.is_timestamp(arrow_type):
        return _avro_timestamp(arrow_type)
    if pa.types.is_date32(arrow_type):
        return {"type": "int", "logicalType": "date"}
    return _avro_primitive(arrow_type)


def _avro_timestamp(arrow_type: pa.TimestampType) -> dict[str, Any]:
    units = {"ms": "millis", "us": "micros"}
    if arrow_type.unit not in units:
        raise ValueError(f"unsupported timestamp unit for Avro: {arrow_type.unit}")
    prefix = "timestamp" if arrow_type.tz else "local-timestamp"
    return {"type": "long", "logicalType": f"{prefix}-{units[arrow_type.unit]}"}


def _avro_primitive(arrow_type: pa.DataType) -> str:
    # Spark widens byte and short to Avro int.
    if arrow_type in (pa.int8(), pa.int16(), pa.int32()):
        return "int"
    for avro_name, primitive in _AVRO_PRIMITIVES.items():
        if arrow_type == primitive:
            return avro_name
    if arrow_type in (pa.large_string(), pa.string_view()):
        return "string"
    if arrow_type in (pa.large_binary(), pa.binary_view()):
        return "bytes"
    raise ValueError(f"unsupported Arrow type for Avro: {arrow_type}")


def _decimal_fixed_size(precision: int) -> int:
    """Fewest bytes whose signed range holds every `precision`-digit number (Spark's rule)."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


# ---------------------------------------------------------------------------------------
# Meta fields


def with_meta_fields(avro_schema: dict[str, Any] | str) -> dict[str, Any]:
    """The schema with the five `_hoodie_*` fields first, as HoodieAvroUtils.addMetadataFields
    writes them; meta fields already present are replaced, never duplicated."""
    record = without_meta_fields(avro_schema)
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS]
    return {**record, "fields": meta + record["fields"]}


def without_meta_fields(avro_schema: dict[str, Any] | str) -> dict[str, Any]:
    """The schema without the `_hoodie_*` meta fields."""
    record = parse_avro_schema(avro_schema)
    return {**record, "fields": [f for f in record["fields"] if f["name"] not in META_FIELDS]}


# ---------------------------------------------------------------------------------------
# Values


def records_to_arrow(records: list[dict[str, Any]], avro_schema: dict[str, Any] | str) -> pa.Table:
    """An Arrow table of records as fastavro reads them (Decimal, date, datetime, dict maps)."""
    return pa.Table.from_pylist(records, schema=avro_to_arrow(avro_schema))


def arrow_to_records(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of an Arrow table as values fastavro can write."""
    rows: list[dict[str, Any]] = table.to_pylist()
    if any(_has_map(f.type) for f in table.schema):
        struct = pa.struct(list(table.schema))
        rows = [_avro_value(row, struct) for row in rows]
    return rows


def _has_map(arrow_type: pa.DataType) -> bool:
    if pa.types.is_map(arrow_type):
        return True
    return any(_has_map(arrow_type.field(i).type) for i in range(arrow_type.num_fields))


def _avro_value(value: Any, arrow_type: pa.DataType) -> Any:
    """Arrow's Python value of a map is a list of pairs; fastavro wants a dict."""
    if value is None:
        return None
    if pa.types.is_map(arrow_type):
        return {k: _avro_value(v, arrow_type.item_type) for k, v in value}
    if pa.types.is_struct(arrow_type):
        return {f.name: _avro_value(value[f.name], f.type) for f in arrow_type}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return [_avro_value(v, arrow_type.value_type) for v in value]
    return value


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows in `schema`. Not `Schema.empty_table()`: it imports pandas (a second or more, paid
    by every merge and job that calls it first)."""
    return pa.Table.from_batches([], schema=schema)
