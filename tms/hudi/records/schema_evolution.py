"""Schema evolution across file slices, blocks and files, as Hudi's readers and writers do it.

The table's schema is the one of its latest completed write (`extraMetadata.schema`), else its create
schema (Hudi's TableSchemaResolver). Reads, compaction and clustering return rows in it: base files and log
blocks written with an older schema are projected to it by column name. A column the file lacks is null; a
nested struct field the file lacks is null; a type the file has in an older form is cast as
HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType casts it:

    int -> long, float, double, string        long -> float, double, string
    float -> double (through its decimal string: 0.1f reads as 0.1), string
    double, bytes (UTF-8), date (yyyy-MM-dd), decimal (BigDecimal.toString) -> string
    decimal(p, s) -> decimal(p', s') with s' >= s and p' - s' >= p - s

Numbers become strings as Java's toString writes them (1.0E10, not 1e+10). With schema-on-read evolution
(`hoodie.schema.on.read.enable`), each file's columns are first renamed to the latest internal schema by field
id (`internal_schema`: renamed columns keep their values, dropped ones vanish), then projected the same way.
Anything else (a narrowing, an incompatible type, a column dropped without schema-on-read) is refused with one
line (SchemaEvolutionError) before a row is read or written."""
from __future__ import annotations

import decimal
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedTableError
from .internal_schema import INTERNAL_SCHEMA_KEY, SCHEMA_FOLDER, InternalSchema, read_history, rename_schema, search
from .schema import avro_to_arrow, with_meta_fields

if TYPE_CHECKING:
    from ..table.hudi_table import HudiTable

SCHEMA_ON_READ = "hoodie.schema.on.read.enable"


class SchemaEvolutionError(UnsupportedTableError):
    """A schema change Hudi's readers do not resolve by name (or TMS does not), refused before any row."""


# --- the table's schema ---------------------------------------------------------------------------------------

def latest_data_schema(table: HudiTable, as_of: str | None = None) -> dict[str, Any] | None:
    """The table's data schema (Avro, no meta fields) at `as_of` (default: now): of the latest completed write
    that records one, else the create schema; None if the table records none."""
    tl = table.timeline
    for inst in reversed(tl.completed_writes()):
        if as_of is not None and inst.timestamp > as_of:
            continue
        schema = tl.commit_metadata(inst).schema()
        if schema:
            return schema
    if table.config.create_schema:
        created: dict[str, Any] = json.loads(table.config.create_schema)
        return created
    return None


def internal_schema_metadata(table: HudiTable) -> dict[str, str]:
    """On a schema-on-read table, the extra metadata entry every commit carries as Hudi's compaction and
    clustering carry it (the internal schema of the latest write that records one), so that Java readers and
    writers after it go on resolving columns by field id; empty on other tables."""
    tl = table.timeline
    for _, meta in tl.metadata_of_active(reversed(tl.completed_writes())):
        text = meta.extra_metadata.get(INTERNAL_SCHEMA_KEY)
        if text:
            return {INTERNAL_SCHEMA_KEY: text}
    return {}


def full_arrow_schema(data_schema: dict[str, Any]) -> pa.Schema:
    """The Arrow schema of the table's rows: meta fields, then the data fields."""
    return avro_to_arrow(with_meta_fields(data_schema))


def require_resolvable_history(table: HudiTable, data_schema: dict[str, Any], as_of: str | None = None) -> None:
    """Refuse, before any file is read, a table whose recorded schemas TMS cannot resolve to `data_schema`: a
    schema of an earlier write on the active timeline that does not evolve into it (by column name, or with
    schema-on-read evolution by field id, see `internal_schema`). Files of archived writes are checked as they
    are read."""
    tl = table.timeline
    target = avro_to_arrow(data_schema)
    history = read_history(table.storage)
    if history:
        _require_consistent_history(table, history, target, as_of)
    seen: set[tuple[str, int]] = set()
    writes = [i for i in tl.completed_writes() if as_of is None or i.timestamp <= as_of]
    for inst, meta in tl.metadata_of_active(writes):
        extra = meta.extra_metadata
        if extra.get(INTERNAL_SCHEMA_KEY) and not history:
            raise SchemaEvolutionError(
                f"table {table.name} uses schema-on-read evolution ({SCHEMA_ON_READ}: commit {inst.timestamp} "
                f"records an internal schema) but keeps no schema history in {SCHEMA_FOLDER}, which names the "
                "columns of each file by field id; TMS refuses rather than read the table wrongly")
        text = extra.get("schema")
        written = search(history, inst.timestamp) if history else None
        key = (text or "", written.version_id if written else -1)
        if not text or key in seen:
            continue
        seen.add(key)
        old = avro_to_arrow(json.loads(text))
        if history:
            old = rename_schema(old, written or history[min(history)], history[max(history)])
        require_evolvable(old, target, f"table {table.name}: the schema of commit {inst.timestamp}")


def _require_consistent_history(table: HudiTable, history: dict[int, InternalSchema], target: pa.Schema,
                                as_of: str | None) -> None:
    """Files are renamed to the newest internal schema: it must be the one of the schema read (`target`)."""
    newest = max(history)
    if as_of is not None and str(newest) > as_of:
        raise SchemaEvolutionError(
            f"table {table.name}: reading as of {as_of} on a table whose schema-on-read evolution changed the "
            f"schema since (version {newest}) is not supported; TMS reads such tables at their latest instant")
    names = [n for n in target.names if not n.startswith("_hoodie_")]
    if history[newest].top_level_names() != names:
        raise SchemaEvolutionError(
            f"table {table.name}: the latest internal schema (version {newest}, columns "
            f"{', '.join(history[newest].top_level_names())}) is not the latest commit's schema (columns "
            f"{', '.join(names)}); TMS refuses rather than guess which names the files' columns take")


# --- which changes resolve ------------------------------------------------------------------------------------

_INTS = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())


def _kind(t: pa.DataType) -> str:
    """The Avro-level kind of an Arrow type: types of one kind differ only in representation."""
    if t in _INTS:
        return "int"
    if t in (pa.int64(), pa.uint32()):
        return "long"
    if pa.types.is_time32(t):  # Avro's time-millis is an int, time-micros a long (TMS reads them as such)
        return "int"
    if pa.types.is_time64(t):
        return "long"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "bytes"
    checks: list[tuple[Callable[[pa.DataType], bool], str]] = [
        (pa.types.is_float32, "float"), (pa.types.is_float64, "double"), (pa.types.is_boolean, "boolean"),
        (pa.types.is_decimal, "decimal"), (pa.types.is_fixed_size_binary, "fixed"), (pa.types.is_date, "date"),
        (pa.types.is_timestamp, "timestamp"), (pa.types.is_struct, "struct"),
        (pa.types.is_map, "map"), (pa.types.is_list, "list"), (pa.types.is_large_list, "list"),
        (pa.types.is_null, "null")]
    for check, kind in checks:
        if check(t):
            return kind
    return str(t)


# (old kind, new kind) pairs Hudi casts (HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType).
_PROMOTIONS = {
    ("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"), ("long", "double"),
    ("float", "double"),
    ("int", "string"), ("long", "string"), ("float", "string"), ("double", "string"), ("bytes", "string"),
    ("date", "string"), ("decimal", "string"),
}

SAME, CAST = "same", "cast"  # same: one kind, only the representation may differ; cast: a Hudi promotion


def relation(old: pa.DataType, new: pa.DataType, path: str = "") -> str:
    """SAME if values of `old` read as `new` unchanged (a plain cast), CAST if they read through one of Hudi's
    promotions or with nested fields added; raises SchemaEvolutionError (naming the column) otherwise."""
    ok, nk = _kind(old), _kind(new)
    if ok == "null" or old.equals(new):
        return SAME
    if ok == nk == "struct":
        names = [new.field(i).name for i in range(new.num_fields)]
        dropped = [old.field(i).name for i in range(old.num_fields) if old.field(i).name not in names]
        if dropped:
            raise _refusal(f"{path}.{dropped[0]}".lstrip("."), "was dropped from the table's schema")
        olds = {old.field(i).name: old.field(i).type for i in range(old.num_fields)}
        rels = [relation(olds[n], new.field(n).type, f"{path}.{n}".lstrip(".")) if n in olds else CAST
                for n in names]
        same_order = [old.field(i).name for i in range(old.num_fields)] == names
        return SAME if same_order and all(r == SAME for r in rels) else CAST
    if ok == nk == "list":
        return relation(old.value_type, new.value_type, f"{path}.element".lstrip("."))
    if ok == nk == "map":
        relation(old.key_type, new.key_type, f"{path}.key".lstrip("."))
        return relation(old.item_type, new.item_type, f"{path}.value".lstrip("."))
    if ok == nk == "decimal":
        if (old.precision, old.scale) == (new.precision, new.scale):
            return SAME
        if new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale:
            return CAST
        raise _refusal(path, f"is {old} in older files and {new} in the table's schema, a narrowing")
    if ok == nk == "fixed":
        if old.byte_width == new.byte_width:
            return SAME
    elif ok == nk:
        return SAME
    if (ok, nk) in _PROMOTIONS:
        return CAST
    change = "a narrowing" if (nk, ok) in _PROMOTIONS else "a change TMS does not cast as Hudi does"
    raise _refusal(path, f"is {old} in older files and {new} in the table's schema, {change}")


def _refusal(path: str, what: str) -> SchemaEvolutionError:
    return SchemaEvolutionError(f"column {path or '(record)'} {what}")


def require_evolvable(old: pa.Schema, new: pa.Schema, what: str) -> None:
    """Refuse (one line, naming `what`) unless rows of schema `old` resolve to schema `new` by column name.
    A column of `old` missing from `new` is a dropped column (Hudi's meta fields aside)."""
    try:
        relation(_struct(old, drop_meta=True), _struct(new, drop_meta=True))
    except SchemaEvolutionError as e:
        raise SchemaEvolutionError(f"{what}: {e}; TMS refuses rather than read it wrongly") from None


def _struct(schema: pa.Schema, drop_meta: bool = False) -> pa.DataType:
    return pa.struct([f for f in schema if not (drop_meta and f.name.startswith("_hoodie_"))])


def slice_schema(file_schema: pa.Schema, target: pa.Schema) -> pa.Schema:
    """The schema a file slice is read in: `file_schema` itself when it holds the target's columns in the same
    kinds (tables without schema changes read exactly as they are stored); else the target's columns, each in
    the file's type where that is of the same kind."""
    if file_schema.names == target.names and relation(_struct(file_schema), _struct(target)) == SAME:
        return file_schema
    fields = []
    for f in target:
        idx = file_schema.get_field_index(f.name)
        mine = file_schema.field(idx) if idx >= 0 else None
        same = mine is not None and relation(mine.type, f.type, f.name) == SAME and _kind(mine.type) != "null"
        fields.append(mine if same and mine is not None else f)
    return pa.schema(fields)


# --- projecting values -----------------------------------------------------------------------------------------

def evolve_column(col: pa.Array | pa.ChunkedArray, new: pa.DataType, path: str = "") -> pa.Array | pa.ChunkedArray:
    """`col` read as type `new`: unchanged, cast, or promoted as Hudi promotes (see the module's doc)."""
    if col.type.equals(new):
        return col
    if relation(col.type, new, path) == SAME:
        return col.cast(new)
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_promote(c, new, path) for c in col.chunks], new)
    return _promote(col, new, path)


def _promote(arr: pa.Array, new: pa.DataType, path: str) -> pa.Array:
    old = arr.type
    ok, nk = _kind(old), _kind(new)
    if relation(old, new, path) == SAME:
        return arr.cast(new)
    if nk == "struct":
        children = []
        for i in range(new.num_fields):
            f = new.field(i)
            idx = old.get_field_index(f.name)
            child = arr.field(idx) if idx >= 0 else pa.nulls(len(arr), f.type)
            children.append(_promote(child, f.type, f"{path}.{f.name}"))
        return pa.StructArray.from_arrays(children, fields=list(new), mask=arr.is_null() if arr.null_count else None)
    if nk == "list":
        values = _promote(arr.values, new.value_type, f"{path}.element")
        cls = pa.LargeListArray if pa.types.is_large_list(new) else pa.ListArray
        return cls.from_arrays(arr.offsets, values, type=new, mask=arr.is_null() if arr.null_count else None)
    if nk == "map":
        items = _promote(arr.items, new.item_type, f"{path}.value")
        keys = _promote(arr.keys, new.key_type, f"{path}.key")
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=new,
                                       mask=arr.is_null() if arr.null_count else None)
    if (ok, nk) == ("float", "double"):  # Double.valueOf(floatValue + ""): 0.1f reads as 0.1
        return pc.cast(pc.cast(arr, pa.string()), new)
    if nk == "string" and ok in ("float", "double"):
        return pa.array([None if v is None else java_float_string(v, ok == "float") for v in arr.to_pylist()],
                        new)
    if nk == "string" and ok == "decimal":  # BigDecimal.toString, which Python's Decimal.__str__ shares
        return pa.array([None if v is None else str(v) for v in arr.to_pylist()], new)
    if nk == "string" and ok == "bytes":
        return pa.array([None if v is None else v.decode("utf-8", errors="replace") for v in arr.to_pylist()], new)
    return arr.cast(new, safe=False)  # int/long widening (float: Java's rounding to nearest), int/long/date


_FLOAT32 = pa.float32()


def java_float_string(value: float, single: bool) -> str:
    """Java's Float.toString / Double.toString: the shortest digits that identify the value, in plain
    notation for 1e-3 <= |x| < 1e7 (at least one fraction digit), else as d.dddE<n>."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    shortest = pc.cast(pa.array([value], _FLOAT32), pa.string())[0].as_py() if single else repr(value)
    sign, digits, exponent = decimal.Decimal(shortest).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent  # the decimal point's position within `text`
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            whole, frac = "0", "0" * -point + text
        else:
            padded = text + "0" * max(0, point - len(text))
            whole, frac = padded[:point], padded[point:]
        out = f"{whole}.{frac or '0'}"
    else:
        out = f"{text[0]}.{text[1:] or '0'}E{point - 1}"
    return ("-" if sign else "") + out


def project(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """`rows` in the columns and types of `target`: columns it lacks are null, columns `target` lacks are left
    out, types are evolved by `evolve_column`."""
    if rows.schema.equals(target):
        return rows
    cols = []
    for f in target:
        if f.name in rows.column_names:
            cols.append(evolve_column(rows.column(f.name), f.type, f.name))
        else:
            cols.append(pa.nulls(rows.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=target)
