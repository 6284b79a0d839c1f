"""Hudi's internal schema (schema-on-read evolution, `hoodie.schema.on.read.enable`): columns by field id.

With schema-on-read, each write records the table's internal schema (SerDeHelper's JSON: a record of fields,
each with an `id`, `name`, `optional` and `type`; arrays and maps carry `element-id`, `key-id`, `value-id`) in
its commit's extra metadata (`latest_schema`), and the history of all versions (`{"schemas": [...]}`, newest
first, each with its `version-id`, the instant that made it; Hudi 1.0 writes `version_id`) in
`.hoodie/.schema/<instant>.schemacommit` (`<instant>_<completion>.schemacommit` from table version 8).

A data file keeps the column names of the schema it was written with. Its schema version is the instant that
wrote it (a base file's commit time, a log block's INSTANT_TIME): the history's version of that instant, else
the newest older one (SerDeHelper.searchSchema). Its columns are matched to the table's latest internal schema
by field id (InternalSchemaMerger): a renamed column takes the old column's values, a dropped column (an id the
latest schema lacks) vanishes, even if a newer column reuses its name. `rename_to_latest` does that renaming;
`schema_evolution.project` then orders the columns, adds the new ones as null and casts promoted types."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..storage.table_storage import Storage
from .schema import empty_table

INTERNAL_SCHEMA_KEY = "latest_schema"  # SerDeHelper.LATEST_SCHEMA, in a commit's extra metadata
SCHEMA_FOLDER = ".hoodie/.schema"      # FileBasedInternalSchemaStorageManager.SCHEMA_NAME
HISTORY_SUFFIX = ".schemacommit"


class InternalSchemaError(ValueError):
    """An internal schema TMS cannot parse or resolve."""


@dataclass(frozen=True)
class Field:
    id: int
    name: str
    type: Node


@dataclass(frozen=True)
class Record:
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Array:
    element_id: int
    element: Node


@dataclass(frozen=True)
class Map:
    key_id: int
    key: Node
    value_id: int
    value: Node


Node = Record | Array | Map | str  # str: a primitive type as SerDeHelper writes it ("int", "decimal(10, 2)")


@dataclass(frozen=True)
class InternalSchema:
    version_id: int
    max_column_id: int
    record: Record

    def names_by_id(self) -> dict[int, str]:
        """Every field's name (nested ones too), by field id."""
        out: dict[int, str] = {}

        def walk(node: Node) -> None:
            if isinstance(node, Record):
                for f in node.fields:
                    out[f.id] = f.name
                    walk(f.type)
            elif isinstance(node, Array):
                walk(node.element)
            elif isinstance(node, Map):
                walk(node.key)
                walk(node.value)
        walk(self.record)
        return out

    def top_level_names(self) -> list[str]:
        """The data columns (Spark SQL's internal schemas also list Hudi's meta fields)."""
        return [f.name for f in self.record.fields if not f.name.startswith("_hoodie_")]


def _node(j: Any) -> Node:
    if isinstance(j, str):
        return j.lower()
    kind = j.get("type")
    if kind == "record":
        return Record(tuple(Field(int(f["id"]), f["name"], _node(f["type"])) for f in j["fields"]))
    if kind == "array":
        return Array(int(j["element-id"]), _node(j["element"]))
    if kind == "map":
        return Map(int(j["key-id"]), _node(j["key"]), int(j["value-id"]), _node(j["value"]))
    raise InternalSchemaError(f"unknown internal schema type {json.dumps(j)[:80]}")


def parse_internal_schema(j: str | dict[str, Any]) -> InternalSchema:
    """One internal schema, from SerDeHelper's JSON (a string, or the parsed object)."""
    obj = json.loads(j) if isinstance(j, str) else j
    try:
        record = _node(obj)
        if not isinstance(record, Record):
            raise InternalSchemaError("an internal schema is a record")
        # SerDeHelper writes "version-id"; accept the underscore spelling some writers used too
        version = obj.get("version-id", obj.get("version_id", 0))
        return InternalSchema(int(version), int(obj.get("max_column_id", -1)), record)
    except (KeyError, TypeError, ValueError) as e:
        raise InternalSchemaError(f"cannot parse an internal schema: {e}") from None


def parse_history(text: str) -> dict[int, InternalSchema]:
    """The versions of a `.schemacommit` history file, by version id."""
    obj = json.loads(text)
    if "schemas" not in obj:
        raise InternalSchemaError("a schema history file has no \"schemas\"")
    return {s.version_id: s for s in (parse_internal_schema(x) for x in obj["schemas"])}


def search(versions: dict[int, InternalSchema], instant: str) -> InternalSchema | None:
    """The version of `instant`, else the newest older one (SerDeHelper.searchSchema); None if none is older."""
    at = int(instant)
    if at in versions:
        return versions[at]
    older = [v for v in versions if v < at]
    return versions[max(older)] if older else None


_COMPLETED_WRITES = (".commit", ".deltacommit", ".replacecommit")
_cache: dict[tuple[str, tuple[str, ...]], dict[int, InternalSchema]] = {}


def _valid_instants(storage: Storage) -> tuple[set[str], str]:
    """The instants with a completed write on the active timeline (`.hoodie/` before table version 8,
    `.hoodie/timeline/` from 8 on, where the name is `<instant>_<completion>.<action>`), and the timeline's
    first instant: a history file older than it belongs to an archived write, valid as Hudi takes it
    (containsOrBeforeTimelineStarts)."""
    completed, first = set(), ""
    for folder in (".hoodie", ".hoodie/timeline"):
        if storage.exists(folder):
            for n in storage.names(folder):
                instant = n.split(".", 1)[0].split("_", 1)[0]
                if not instant.isdigit():
                    continue
                first = min(first, instant) if first else instant
                if n.endswith(_COMPLETED_WRITES):
                    completed.add(instant)
    return completed, first


def read_history(storage: Storage) -> dict[int, InternalSchema]:
    """The table's internal schema history, by version id: the newest `.schemacommit` file whose write
    completed (each holds all versions before it; files of failed or pending writes are ignored, as Hudi ignores
    them). Empty if the table keeps none (it does not use schema-on-read evolution)."""
    if not storage.exists(SCHEMA_FOLDER):
        return {}
    names = tuple(sorted(n for n in storage.names(SCHEMA_FOLDER) if n.endswith(HISTORY_SUFFIX)))  # by instant
    key = (storage.full(SCHEMA_FOLDER), names)
    if key in _cache:
        return _cache[key]
    completed, first = _valid_instants(storage) if names else (set(), "")
    history: dict[int, InternalSchema] = {}
    for name in reversed(names):
        instant = name[:-len(HISTORY_SUFFIX)].split("_", 1)[0]  # <instant>[_<completion>].schemacommit
        if instant in completed or (first and instant < first):
            history = parse_history(storage.read_bytes(f"{SCHEMA_FOLDER}/{name}").decode("utf-8"))
            if name == names[-1]:  # a newer file of a pending write may become valid: keep looking then
                if len(_cache) > 256:  # a long-running worker sees many tables and history files
                    _cache.clear()
                _cache[key] = history
            break
    return history


def history_rename(history: dict[int, InternalSchema], rows: pa.Table, instant: str) -> pa.Table:
    """`rows` of a file (or log block) written at `instant`, renamed to the table's latest internal schema
    (the newest version of `history`, the table's read_history: read once per file slice, each read of it costs
    requests on an object store) by field id; unchanged on tables without schema-on-read."""
    if not history:
        return rows
    written = search(history, instant)
    if written is None:  # written before the table's first internal schema: its names are that schema's
        written = history[min(history)]
    return rename_to_latest(rows, written, history[max(history)])


# --- renaming a file's columns by field id ---------------------------------------------------------------------

def rename_to_latest(rows: pa.Table, written: InternalSchema, latest: InternalSchema) -> pa.Table:
    """`rows`, written with internal schema `written`, with each column (nested fields too) named as the
    latest schema names its field id; columns whose id the latest schema lacks are dropped. Columns the internal
    schema does not describe (Hudi's meta fields) are kept as they are."""
    if written.version_id == latest.version_id or written.record == latest.record:
        return rows
    names = latest.names_by_id()
    by_name = {f.name: f for f in written.record.fields}
    cols, fields = [], []
    for i, f in enumerate(rows.schema):
        node = by_name.get(f.name)
        if node is None:
            cols.append(rows.column(i))
            fields.append(f)
            continue
        if node.id not in names:
            continue
        col = rows.column(i)
        new_type = _renamed_type(col.type, node.type, names)
        col = pa.chunked_array([_renamed_array(c, node.type, names, new_type) for c in col.chunks], new_type)
        cols.append(col)
        fields.append(pa.field(names[node.id], new_type, f.nullable, f.metadata))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, rows.schema.metadata))


def rename_schema(schema: pa.Schema, written: InternalSchema, latest: InternalSchema) -> pa.Schema:
    """The schema `rename_to_latest` gives rows of `schema` (for refusing a file before its rows are read)."""
    return rename_to_latest(empty_table(schema), written, latest).schema


def _renamed_type(t: pa.DataType, node: Node, names: dict[int, str]) -> pa.DataType:
    if isinstance(node, Record) and pa.types.is_struct(t):
        children = {f.name: f for f in node.fields}
        out = []
        for i in range(t.num_fields):
            f = t.field(i)
            c = children.get(f.name)
            if c is None:
                out.append(f)
            elif c.id in names:
                out.append(pa.field(names[c.id], _renamed_type(f.type, c.type, names), f.nullable, f.metadata))
        return pa.struct(out)
    if isinstance(node, Array) and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        vf = t.value_field
        value = vf.with_type(_renamed_type(vf.type, node.element, names))
        return pa.large_list(value) if pa.types.is_large_list(t) else pa.list_(value)
    if isinstance(node, Map) and pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_renamed_type(t.key_type, node.key, names)),
                       t.item_field.with_type(_renamed_type(t.item_type, node.value, names)), t.keys_sorted)
    return t


def _renamed_array(arr: pa.Array, node: Node, names: dict[int, str], new: pa.DataType) -> pa.Array:
    t = arr.type
    if t.equals(new):
        return arr
    if arr.offset and isinstance(node, (Array, Map)):  # a sliced list takes no null mask: copy it to offset 0
        arr = pa.concat_arrays([arr])
    mask = arr.is_null() if arr.null_count else None
    if isinstance(node, Record) and pa.types.is_struct(t):
        children = {f.name: f for f in node.fields}
        fields_of = arr.flatten()  # the children at the array's offset (the struct's nulls are `mask`)
        kids = []
        for i in range(t.num_fields):
            f = t.field(i)
            c = children.get(f.name)
            if c is None or c.id in names:
                kid = fields_of[i]
                kids.append(kid if c is None else _renamed_array(kid, c.type, names,
                                                                  _renamed_type(kid.type, c.type, names)))
        return pa.StructArray.from_arrays(kids, fields=list(new), mask=mask)
    if isinstance(node, Array):
        values = _renamed_array(arr.values, node.element, names, new.value_type)
        cls = pa.LargeListArray if pa.types.is_large_list(new) else pa.ListArray
        return cls.from_arrays(arr.offsets, values, type=new, mask=mask)
    if isinstance(node, Map):
        keys = _renamed_array(arr.keys, node.key, names, new.key_type)
        items = _renamed_array(arr.items, node.value, names, new.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=new, mask=mask)
    return arr


def history_rename_schema(history: dict[int, InternalSchema], schema: pa.Schema, instant: str) -> pa.Schema:
    """The schema `history_rename` gives rows of `schema` written at `instant` (to refuse before reading)."""
    return history_rename(history, empty_table(schema), instant).schema
