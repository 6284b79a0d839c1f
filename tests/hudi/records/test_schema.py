"""Avro <-> Arrow schema conversion, checked against the schemas Spark + Hudi wrote in the fixtures."""

import datetime
import decimal
import io
import json
import re
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tms.hudi.log_format.log_file import BlockType, read_log_file
from tms.hudi.records.schema import (
    META_FIELDS,
    arrow_to_avro,
    arrow_to_records,
    avro_schema_json,
    avro_to_arrow,
    parse_avro_schema,
    records_to_arrow,
    with_meta_fields,
    without_meta_fields,
)

V6_TABLES = {
    "cow_v6_nonpartitioned": "v6_nonpartitioned",
    "cow_v6_simplekeygen_nonhivestyle_overwritetable": "v6_simplekeygen_nonhivestyle_overwritetable",
    "mor_v6_nonpartitioned_rollback": "v6_nonpartitioned_rollback",
    "mor_v6_trips_8i1u": "v6_trips_8i1u",
}


@pytest.fixture(scope="module")
def fixtures_dir(fixtures_root) -> Path:
    return fixtures_root


def commit_schema(table: Path) -> dict:
    """`extraMetadata.schema` of the latest v6 (JSON) commit."""
    completed = re.compile(r"\d+\.(delta|replace)?commit")
    instants = sorted(p for p in (table / ".hoodie").iterdir() if completed.fullmatch(p.name))
    return json.loads(json.loads(instants[-1].read_text())["extraMetadata"]["schema"])


def create_schema(table: Path) -> dict:
    """`hoodie.table.create.schema`, unescaped from Java properties syntax."""
    for line in (table / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.create.schema="):
            return json.loads(line.split("=", 1)[1].replace("\\:", ":").replace("\\=", "="))
    raise AssertionError("no hoodie.table.create.schema")


def test_meta_fields_in_hudi_order():
    assert META_FIELDS == (
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    )


@pytest.mark.parametrize("folder", V6_TABLES.values())
def test_arrow_to_avro_reproduces_the_schema_spark_wrote(fixtures_dir, folder):
    table = fixtures_dir / folder
    schema = commit_schema(table)
    assert arrow_to_avro(avro_to_arrow(schema), folder) == schema
    # The create schema has [T, "null"] unions; both orders mean the same columns.
    assert avro_to_arrow(create_schema(table)) == avro_to_arrow(schema)


@pytest.mark.parametrize("folder", ["v6_nonpartitioned", "v6_trips_8i1u"])
def test_with_meta_fields_matches_java_byte_for_byte(fixtures_dir, folder):
    table = fixtures_dir / folder
    base_file = next(table.rglob("*.parquet"))
    java_schema = pq.read_schema(base_file).metadata[b"parquet.avro.schema"].decode()
    assert avro_schema_json(with_meta_fields(commit_schema(table))) == java_schema


def test_flat_schema_matches_the_base_file(fixtures_dir):
    table = fixtures_dir / "v6_trips_8i1u"
    base_schema = pq.read_schema(next(table.rglob("*.parquet")))
    assert avro_to_arrow(with_meta_fields(commit_schema(table))).equals(base_schema)


def test_nested_types(fixtures_dir):
    arrow = avro_to_arrow(commit_schema(fixtures_dir / "v6_nonpartitioned"))
    assert arrow.field("id") == pa.field("id", pa.int32())
    assert arrow.field("decimalField").type == pa.decimal128(10, 5)
    assert arrow.field("dateField").type == pa.date32()
    assert arrow.field("timestampField").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("binaryField").type == pa.binary()
    item = pa.struct([("arr_struct_f1", pa.string()), ("arr_struct_f2", pa.int32())])
    assert arrow.field("arrayField").type == pa.list_(pa.field("element", item))
    value = pa.struct(
        [("map_field_value_struct_f1", pa.float64()), ("map_field_value_struct_f2", pa.bool_())]
    )
    assert arrow.field("mapField").type == pa.map_(pa.string(), value)
    child = pa.struct([("child_field1", pa.float64()), ("child_field2", pa.bool_())])
    struct = pa.struct([("field1", pa.string()), ("field2", pa.int32()), ("child_struct", child)])
    assert arrow.field("structField").type == struct
    assert all(f.nullable for f in arrow)


def test_spark_parquet_log_block_casts_to_the_block_schema(fixtures_dir):
    """A Parquet block written by Spark reads as the Arrow schema of its header schema."""
    log = next((fixtures_dir / "v6_nonpartitioned_rollback").glob(".*.log.1_*"))
    (block,) = read_log_file(log.read_bytes())
    assert block.block_type == BlockType.PARQUET_DATA
    records = block.records()
    cast = records.cast(avro_to_arrow(block.schema))
    assert cast.to_pylist() == records.to_pylist()


def test_not_nullable_and_plain_types():
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": "long"},
            {"name": "b", "type": {"type": "enum", "name": "e", "symbols": ["X", "Y"]}},
            {"name": "c", "type": {"type": "fixed", "name": "f", "size": 3}},
            {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}},
            {"name": "e", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "f", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
            {"name": "g", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "h", "type": "float"},
        ],
    }
    assert avro_to_arrow(schema) == pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False),
            pa.field("b", pa.string(), nullable=False),
            pa.field("c", pa.binary(3), nullable=False),
            pa.field("d", pa.decimal256(40, 2), nullable=False),
            pa.field("e", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("f", pa.timestamp("us"), nullable=False),
            pa.field("g", pa.string(), nullable=False),
            pa.field("h", pa.float32(), nullable=False),
        ]
    )


def test_arrow_to_avro_spark_conventions():
    arrow = pa.schema(
        [
            pa.field("k", pa.int64(), nullable=False),
            pa.field("small", pa.int16()),
            pa.field("price", pa.decimal128(18, 2)),
            pa.field("at", pa.timestamp("us")),
            pa.field("tags", pa.list_(pa.field("element", pa.string(), nullable=False))),
            pa.field("s", pa.struct([("x", pa.int32())])),
        ]
    )
    schema = arrow_to_avro(arrow, "t")
    assert (schema["name"], schema["namespace"]) == ("t_record", "hoodie.t")
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["k"] == {"name": "k", "type": "long"}
    assert fields["small"] == {"name": "small", "type": ["null", "int"], "default": None}
    assert fields["price"]["type"][1] == {
        "type": "fixed",
        "name": "fixed",
        "namespace": "hoodie.t.t_record.price",
        "size": 8,
        "logicalType": "decimal",
        "precision": 18,
        "scale": 2,
    }
    assert fields["at"]["type"][1] == {"type": "long", "logicalType": "local-timestamp-micros"}
    assert fields["tags"]["type"][1] == {"type": "array", "items": "string"}
    assert fields["s"]["type"][1]["namespace"] == "hoodie.t.t_record"
    fastavro.parse_schema(schema)  # a valid Avro schema


@pytest.mark.parametrize(
    "precision,size", [(1, 1), (2, 1), (3, 2), (9, 4), (10, 5), (18, 8), (19, 9), (38, 16)]
)
def test_decimal_fixed_size_is_sparks(precision, size):
    schema = arrow_to_avro(pa.schema([pa.field("d", pa.decimal128(precision, 0), nullable=False)]), "t")
    assert schema["fields"][0]["type"]["size"] == size


def test_unsupported_types_are_refused():
    with pytest.raises(ValueError, match="union"):
        avro_to_arrow({"type": "record", "name": "r", "fields": [{"name": "u", "type": ["int", "string"]}]})
    with pytest.raises(ValueError, match="map keys"):
        arrow_to_avro(pa.schema([("m", pa.map_(pa.int32(), pa.int32()))]), "t")
    with pytest.raises(ValueError):
        arrow_to_avro(pa.schema([("u", pa.uint64())]), "t")


def test_meta_fields_added_once_and_removed(fixtures_dir):
    schema = commit_schema(fixtures_dir / "v6_trips_8i1u")
    with_meta = with_meta_fields(schema)
    assert [f["name"] for f in with_meta["fields"][:5]] == list(META_FIELDS)
    assert with_meta["fields"][0] == {
        "name": "_hoodie_commit_time",
        "type": ["null", "string"],
        "doc": "",
        "default": None,
    }
    assert with_meta_fields(with_meta) == with_meta
    assert with_meta_fields(json.dumps(schema)) == with_meta
    assert without_meta_fields(with_meta) == schema
    assert parse_avro_schema(avro_schema_json(with_meta)) == with_meta


ALL_TYPES = pa.schema(
    [
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("b", pa.bool_()),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("dec", pa.decimal128(10, 5)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_ms", pa.timestamp("ms", tz="UTC")),
        ("arr", pa.list_(pa.struct([("x", pa.string())]))),
        ("m", pa.map_(pa.string(), pa.float64())),
        ("st", pa.struct([("y", pa.int32()), ("z", pa.struct([("w", pa.bool_())]))])),
    ]
)
ALL_TYPES_ROWS = [
    {
        "i": -7,
        "l": 2**40,
        "f": 1.5,
        "d": 3.14159,
        "b": True,
        "s": "héllo",
        "bin": b"\x00\xff",
        "dec": decimal.Decimal("12345.67890"),
        "day": datetime.date(2023, 4, 1),
        "ts": datetime.datetime(2023, 4, 1, 12, 1, 2, 345678, tzinfo=datetime.UTC),
        "ts_ms": datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=datetime.UTC),
        "arr": [{"x": "red"}, None, {"x": None}],
        "m": [("k1", 1.0), ("k2", None)],
        "st": {"y": 1, "z": {"w": False}},
    },
    {name: None for name in ALL_TYPES.names},
]


def test_values_round_trip_through_avro_binary():
    table = pa.Table.from_pylist(ALL_TYPES_ROWS, schema=ALL_TYPES)
    schema = arrow_to_avro(ALL_TYPES, "t")
    parsed = fastavro.parse_schema(schema)
    buffer = io.BytesIO()
    for record in arrow_to_records(table):
        fastavro.schemaless_writer(buffer, parsed, record)
    buffer.seek(0)
    decoded = [fastavro.schemaless_reader(buffer, parsed) for _ in range(table.num_rows)]
    assert records_to_arrow(decoded, schema).equals(table)


def test_arrow_to_records_gives_maps_as_dicts():
    table = pa.Table.from_pylist(ALL_TYPES_ROWS, schema=ALL_TYPES)
    first = arrow_to_records(table)[0]
    assert first["m"] == {"k1": 1.0, "k2": None}
    assert first["st"] == {"y": 1, "z": {"w": False}}
    assert first["dec"] == decimal.Decimal("12345.67890")
