"""Schema-on-read evolution (Hudi's internal schema): a file's columns are matched to the table's latest
internal schema by field id, so renamed columns keep their values, dropped ones vanish (even when a newer column
takes their name), reordered ones move and added ones read as null."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tms.hudi.records.internal_schema import parse_history, parse_internal_schema, rename_to_latest, search
from tms.hudi.records.schema_evolution import SchemaEvolutionError, project, require_evolvable


def _field(fid: int, name: str, typ: object) -> dict:
    return {"id": fid, "name": name, "optional": True, "type": typ}


# Version 1: id, v (long), w (string), s: struct<x int, y string>, tags: array<struct<t string>>
V1 = {"max_column_id": 8, "version-id": 100, "type": "record", "fields": [
    _field(0, "id", "long"), _field(1, "v", "long"), _field(2, "w", "string"),
    _field(3, "s", {"type": "record", "fields": [_field(4, "x", "int"), _field(5, "y", "string")]}),
    _field(6, "tags", {"type": "array", "element-id": 7, "element_optional": True,
                       "element": {"type": "record", "fields": [_field(8, "t", "string")]}})]}
# Version 2: v renamed val and promoted to double, w dropped and a new w added (id 9) before val, s.x renamed
# s.x2 and s.y dropped, tags[].t renamed tags[].label
V2 = {"max_column_id": 9, "version-id": 200, "type": "record", "fields": [
    _field(0, "id", "long"), _field(9, "w", "string"), _field(1, "val", "double"),
    _field(3, "s", {"type": "record", "fields": [_field(4, "x2", "long")]}),
    _field(6, "tags", {"type": "array", "element-id": 7, "element_optional": True,
                       "element": {"type": "record", "fields": [_field(8, "label", "string")]}})]}

WRITTEN_V1 = pa.table({
    "_hoodie_record_key": ["0", "1", "2"],
    "id": pa.array([0, 1, 2], pa.int64()),
    "v": pa.array([10, None, 30], pa.int64()),
    "w": ["a", "b", None],
    "s": pa.array([{"x": 1, "y": "p"}, None, {"x": None, "y": "q"}],
                  pa.struct([("x", pa.int32()), ("y", pa.string())])),
    "tags": pa.array([[{"t": "k"}], [], None], pa.list_(pa.struct([("t", pa.string())]))),
})
LATEST = pa.schema([("_hoodie_record_key", pa.string()), ("id", pa.int64()), ("w", pa.string()),
                    ("val", pa.float64()), ("s", pa.struct([("x2", pa.int64())])),
                    ("tags", pa.list_(pa.struct([("label", pa.string())])))])


def test_a_file_of_an_older_version_reads_by_field_id():
    v1, v2 = parse_internal_schema(json.dumps(V1)), parse_internal_schema(V2)
    rows = project(rename_to_latest(WRITTEN_V1, v1, v2), LATEST)
    assert rows.schema == LATEST
    assert rows.to_pylist() == [
        {"_hoodie_record_key": "0", "id": 0, "w": None, "val": 10.0, "s": {"x2": 1}, "tags": [{"label": "k"}]},
        {"_hoodie_record_key": "1", "id": 1, "w": None, "val": None, "s": None, "tags": []},
        {"_hoodie_record_key": "2", "id": 2, "w": None, "val": 30.0, "s": {"x2": None}, "tags": None},
    ]


def test_a_sliced_file_reads_by_field_id_at_its_offset():
    v1, v2 = parse_internal_schema(V1), parse_internal_schema(V2)
    rows = project(rename_to_latest(WRITTEN_V1.slice(1), v1, v2), LATEST)
    assert [r["s"] for r in rows.to_pylist()] == [None, {"x2": None}]
    assert [r["val"] for r in rows.to_pylist()] == [None, 30.0]


def test_a_file_of_the_latest_version_is_left_as_it_is():
    v2 = parse_internal_schema(V2)
    rows = pa.table({"id": [1], "w": ["new"], "val": [1.5]})
    assert rename_to_latest(rows, v2, v2) is rows


def test_the_version_of_an_instant_is_its_own_or_the_newest_older_one():
    history = parse_history(json.dumps({"schemas": [V2, V1]}))
    assert sorted(history) == [100, 200]
    assert search(history, "100").version_id == 100
    assert search(history, "150").version_id == 100
    assert search(history, "200").version_id == 200
    assert search(history, "999").version_id == 200
    assert search(history, "99") is None


def test_a_type_change_tms_does_not_resolve_is_refused_naming_the_column():
    v1 = parse_internal_schema(V1)
    v3 = parse_internal_schema({**V1, "version-id": 300, "fields": [_field(0, "id", "long"),
                                                                     _field(1, "amount", "int")]})
    renamed = rename_to_latest(WRITTEN_V1, v1, v3).schema
    assert renamed.names == ["_hoodie_record_key", "id", "amount"]
    with pytest.raises(SchemaEvolutionError, match="column amount is int64 in older files and int32.*narrowing"):
        require_evolvable(renamed, pa.schema([("id", pa.int64()), ("amount", pa.int32())]), "base file f")


def test_a_schema_on_read_type_change_tms_does_not_cast_is_refused():
    """Schema-on-read allows long -> decimal (Spark's cast); TMS refuses it in one line."""
    v1 = parse_internal_schema(V1)
    v3 = parse_internal_schema({**V1, "version-id": 300, "fields": [_field(0, "id", "long"),
                                                                     _field(1, "amount", "decimal(20, 0)")]})
    renamed = rename_to_latest(WRITTEN_V1, v1, v3).schema
    with pytest.raises(SchemaEvolutionError,
                       match=r"column amount is int64 in older files and decimal128\(20, 0\).*TMS does not cast"):
        require_evolvable(renamed, pa.schema([("id", pa.int64()), ("amount", pa.decimal128(20, 0))]), "base f")
