"""Hudi log files: the fixtures written by Spark + Hudi parse exactly, our blocks round trip, and
hudi-rs reads tables we append blocks to."""

import datetime
import decimal
import io
import json
import shutil
import string
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tms.hudi.fs_view.file_names import LogFileName
from tms.hudi.log_format.log_file import (
    BlockType,
    CommandType,
    HeaderKey,
    avro_data_block,
    delete_block,
    parquet_data_block,
    read_log_file,
    rollback_command_block,
)
from tms.hudi.records.schema import (
    META_FIELDS,
    arrow_to_avro,
    avro_schema_json,
    avro_to_arrow,
    records_to_arrow,
    with_meta_fields,
    without_meta_fields,
)


@pytest.fixture(scope="module")
def fixtures_dir(fixtures_root) -> Path:
    return fixtures_root


def log_files(table: Path) -> list[Path]:
    return sorted(table.rglob(".*.log.*"), key=lambda p: (str(p.parent), LogFileName.parse(p.name)))


def data_log_files(table: Path) -> list[Path]:
    return [p for p in log_files(table) if ".hoodie" not in p.parts]


def keys(block) -> list[str]:
    return block.records().column("_hoodie_record_key").to_pylist()


# ---------------------------------------------------------------------------------------
# The fixtures


def test_every_fixture_log_file_parses(fixtures_dir):
    files = [p for table in fixtures_dir.iterdir() for p in log_files(table)]
    assert len(files) == 343  # 19 in the data tables, 324 in the metadata tables (63 of them the v8 one)
    for path in files:
        name = LogFileName.parse(path.name)
        assert str(name) == path.name
        blocks = read_log_file(path.read_bytes())
        assert blocks, path
        assert sum(b.size for b in blocks) == path.stat().st_size
        assert all(b.block_type != BlockType.CORRUPT for b in blocks), path
        assert all(b.footer == {} for b in blocks)


def test_metadata_table_logs_hold_hfile_and_delete_blocks(fixtures_dir):
    metadata = fixtures_dir / "v8_trips_8i3u1d" / ".hoodie" / "metadata"
    types = [b.block_type for p in log_files(metadata) for b in read_log_file(p.read_bytes())]
    assert types.count(BlockType.HFILE_DATA) == 35
    assert types.count(BlockType.DELETE) == 28
    assert len(types) == 63


def test_v6_avro_data_block(fixtures_dir):
    (path,) = data_log_files(fixtures_dir / "v6_trips_8i1u")
    (block,) = read_log_file(path.read_bytes())
    assert block.block_type == BlockType.AVRO_DATA
    assert block.instant_time == "20250331030645735"
    assert [f["name"] for f in block.schema["fields"][:5]] == list(META_FIELDS)
    assert block.record_count() == 1
    (row,) = block.records().to_pylist()
    assert row["_hoodie_record_key"] == "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"
    assert row["_hoodie_commit_time"] == "20250331030645735"
    assert row["_hoodie_file_name"] == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
    assert (row["rider"], row["fare"], row["ts"]) == ("rider-D", 25.0, 1695046462179)


def test_v6_parquet_blocks_and_rollback_command(fixtures_dir):
    paths = data_log_files(fixtures_dir / "v6_nonpartitioned_rollback")
    first, second, third = (read_log_file(p.read_bytes()) for p in paths)
    assert [b.block_type for b in first + second + third] == [
        BlockType.PARQUET_DATA,
        BlockType.COMMAND,
        BlockType.PARQUET_DATA,
    ]
    assert (first[0].instant_time, first[0].record_count(), keys(first[0])) == ("20250126040826878", 1, ["1"])
    command = second[0]
    assert command.is_rollback and command.command_type == CommandType.ROLLBACK
    assert (command.instant_time, command.target_instant_time) == ("20250126040936578", "20250126040826878")
    assert command.content() == b""
    assert (third[0].instant_time, third[0].record_count(), keys(third[0])) == ("20250126060846931", 1, ["2"])
    row = third[0].records().to_pylist()[0]
    assert (row["name"], row["decimalField"]) == ("Bob", decimal.Decimal("67890.12345"))


def test_v8_logs_with_updates_and_deletes(fixtures_dir):
    summary = {}
    for path in data_log_files(fixtures_dir / "v8_trips_8i3u1d"):
        where = f"{path.parent.name}/{LogFileName.parse(path.name).instant}"
        (block,) = read_log_file(path.read_bytes())
        if block.block_type == BlockType.DELETE:
            summary[where] = ("delete", block.deleted_keys())
        else:
            summary[where] = (block.block_type.name, keys(block))
        assert block.instant_time == where[-17:]  # v8: one log file per delta commit
    assert summary == {
        "city=chennai/20251220210127080": ("AVRO_DATA", ["c8abbe79-8d89-47ea-b4ce-4d224bae5bfa"]),
        "city=chennai/20251220210128625": (
            "delete",
            [("c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "city=chennai", None)],
        ),
        "city=san_francisco/20251220210123755": ("AVRO_DATA", ["334e26e9-8355-45cc-97c6-c31daf0df330"]),
        "city=sao_paulo/20251220210125441": (
            "delete",
            [("e3cf430c-889d-4015-bc98-59bdce1e530c", "city=sao_paulo", None)],
        ),
        "city=sao_paulo/20251220210130911": ("AVRO_DATA", ["7a84095f-737f-40bc-b62f-6b69664712d2"]),
    }


def test_writers_reproduce_java_blocks(fixtures_dir):
    """Same records, same header: the same bytes (or, where Java's HashMap put the header
    keys in another order, the same content)."""
    (avro_log,) = data_log_files(fixtures_dir / "v6_trips_8i1u")
    (block,) = read_log_file(avro_log.read_bytes())
    rewritten = avro_data_block(block.records(), without_meta_fields(block.schema), block.instant_time)
    assert rewritten == avro_log.read_bytes()

    command_log = data_log_files(fixtures_dir / "v6_nonpartitioned_rollback")[1]
    (block,) = read_log_file(command_log.read_bytes())
    assert rollback_command_block(block.target_instant_time, block.instant_time) == command_log.read_bytes()

    v8_logs = data_log_files(fixtures_dir / "v8_trips_8i3u1d")
    delete_log = next(p for p in v8_logs if "20251220210128625" in p.name)
    (block,) = read_log_file(delete_log.read_bytes())
    natural_order = [(key, partition, None) for key, partition, _ in block.deleted_keys()]
    schema = without_meta_fields(block.schema)
    (ours,) = read_log_file(delete_block(natural_order, block.instant_time, ["null", "long"], schema))
    assert ours.content() == block.content()
    assert ours.header == block.header


# ---------------------------------------------------------------------------------------
# Round trips

SCHEMA = {
    "type": "record",
    "name": "t_record",
    "namespace": "hoodie.t",
    "fields": [
        {"name": "id", "type": ["null", "string"], "default": None},
        {"name": "ts", "type": ["null", "long"], "default": None},
        {"name": "price", "type": ["null", {"type": "fixed", "name": "fixed", "size": 5,
                                            "logicalType": "decimal", "precision": 10, "scale": 2}],
         "default": None},
        {"name": "tags", "type": ["null", {"type": "map", "values": ["null", "long"]}], "default": None},
    ],
}


def rows_table(instant: str, rows: list[dict], partition: str = "p", file_id: str = "f-0") -> pa.Table:
    records = [
        {
            "_hoodie_commit_time": instant,
            "_hoodie_commit_seqno": f"{instant}_0_{n}",
            "_hoodie_record_key": row["id"],
            "_hoodie_partition_path": partition,
            "_hoodie_file_name": file_id,
            **row,
        }
        for n, row in enumerate(rows)
    ]
    return records_to_arrow(records, with_meta_fields(SCHEMA))


SAMPLE = rows_table(
    "20250101000000000",
    [
        {"id": "a", "ts": 1, "price": decimal.Decimal("12.50"), "tags": {"x": 1, "y": None}},
        {"id": "b", "ts": None, "price": None, "tags": None},
    ],
)


@pytest.mark.parametrize(
    "writer,block_type", [(avro_data_block, BlockType.AVRO_DATA), (parquet_data_block, BlockType.PARQUET_DATA)]
)
def test_data_block_round_trip(writer, block_type):
    (block,) = read_log_file(writer(SAMPLE, SCHEMA, "20250101000000000"))
    assert block.block_type == block_type
    assert block.header == {
        HeaderKey.INSTANT_TIME: "20250101000000000",
        HeaderKey.SCHEMA: avro_schema_json(with_meta_fields(SCHEMA)),
    }
    assert block.schema == with_meta_fields(SCHEMA)
    assert block.record_count() == 2
    assert block.records().equals(SAMPLE)


@pytest.mark.parametrize("writer", [avro_data_block, parquet_data_block])
def test_data_block_takes_columns_in_any_order_and_needs_all(writer):
    shuffled = SAMPLE.select(list(reversed(SAMPLE.column_names)))
    (block,) = read_log_file(writer(shuffled, json.dumps(SCHEMA), "20250101000000000"))
    assert block.records().equals(SAMPLE)
    with pytest.raises(ValueError, match="_hoodie_record_key"):
        writer(SAMPLE.drop_columns(["_hoodie_record_key"]), SCHEMA, "20250101000000000")


@pytest.mark.parametrize(
    "ordering_type,values",
    [
        ("long", [5, 2**40]),
        (["null", "long"], [0, -1]),
        (["int", "null"], [7, -3]),
        ("string", ["2024-01-01", ""]),
        ("double", [1.5, -0.25]),
        ("float", [1.5, 2.0]),
        ("boolean", [True, False]),
        ("bytes", [b"\x01", b""]),
        ({"type": "int", "logicalType": "date"}, [datetime.date(2024, 2, 29), datetime.date(1960, 1, 1)]),
        (
            {"type": "fixed", "name": "f", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2},
            [decimal.Decimal("12.34"), decimal.Decimal("-1")],
        ),
        ({"type": "long", "logicalType": "timestamp-micros"}, [1_700_000_000_000_000, 0]),
    ],
)
def test_delete_block_round_trip(ordering_type, values):
    deletes = [("k1", "p1", values[0]), ("k2", "", values[1])]
    (block,) = read_log_file(delete_block(deletes, "20250101000000000", ordering_type))
    assert block.block_type == BlockType.DELETE
    assert block.header == {HeaderKey.INSTANT_TIME: "20250101000000000"}
    assert block.deleted_keys() == deletes


def test_delete_block_natural_order_and_schema_header():
    (block,) = read_log_file(delete_block([("k", "p", None)], "20250101000000000", "long", SCHEMA))
    assert block.deleted_keys() == [("k", "p", None)]  # Java's "no ordering value": an int 0
    # an int 0 is that value too (Hudi's OrderingValues.isDefault); a long 0 is an ordering value like any
    (int_zero,) = read_log_file(delete_block([("k", "p", 0)], "20250101000000000", "int"))
    assert int_zero.deleted_keys() == [("k", "p", None)]
    (long_zero,) = read_log_file(delete_block([("k", "p", 0)], "20250101000000000", "long"))
    assert long_zero.deleted_keys() == [("k", "p", 0)]
    assert block.schema == with_meta_fields(SCHEMA)
    assert read_log_file(delete_block([], "20250101000000000", "long"))[0].deleted_keys() == []


def test_delete_block_refuses_unknown_ordering_types():
    with pytest.raises(ValueError, match="ordering field type"):
        delete_block([("k", "p", 1)], "20250101000000000", {"type": "record", "name": "r", "fields": []})


def test_rollback_command_block_round_trip():
    (block,) = read_log_file(rollback_command_block("20250101000000000", "20250102000000000"))
    assert block.block_type == BlockType.COMMAND and block.is_rollback
    assert (block.instant_time, block.target_instant_time) == ("20250102000000000", "20250101000000000")
    with pytest.raises(ValueError, match="not a DELETE block"):
        block.deleted_keys()


def test_content_accessors_check_the_block_type():
    (block,) = read_log_file(delete_block([("k", "p", 1)], "20250101000000000", "long"))
    with pytest.raises(ValueError, match="PARQUET_DATA"):
        block.records()
    assert not block.is_rollback


# ---------------------------------------------------------------------------------------
# Random tables through both data block kinds

_NAMES = st.text(string.ascii_letters, min_size=1, max_size=8)
_UTC_DATETIMES = st.datetimes(
    min_value=datetime.datetime(1, 1, 2),
    max_value=datetime.datetime(9999, 12, 30),
    timezones=st.just(datetime.UTC),
)


def _decimal_type():
    return st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: pa.decimal128(p, s)))


_PRIMITIVES = st.one_of(
    st.sampled_from(
        [
            pa.int32(),
            pa.int64(),
            pa.float32(),
            pa.float64(),
            pa.bool_(),
            pa.string(),
            pa.binary(),
            pa.date32(),
            pa.timestamp("us", tz="UTC"),
            pa.timestamp("ms", tz="UTC"),
        ]
    ),
    _decimal_type(),
)


def _struct(children):
    return st.dictionaries(_NAMES, st.tuples(children, st.booleans()), min_size=1, max_size=3).map(
        lambda fields: pa.struct([pa.field(n, t, nullable=null) for n, (t, null) in fields.items()])
    )


_TYPES = st.recursive(
    _PRIMITIVES,
    lambda children: st.one_of(
        st.tuples(children, st.booleans()).map(lambda t: pa.list_(pa.field("element", *t))),
        st.tuples(children, st.booleans()).map(lambda t: pa.map_(pa.string(), pa.field("value", *t))),
        _struct(children),
    ),
    max_leaves=4,
)


def _values(arrow_type: pa.DataType, nullable: bool):
    values = _non_null_values(arrow_type)
    return st.one_of(st.none(), values) if nullable else values


def _non_null_values(t: pa.DataType):
    if pa.types.is_int32(t):
        return st.integers(-(2**31), 2**31 - 1)
    if pa.types.is_int64(t):
        return st.integers(-(2**63), 2**63 - 1)
    if pa.types.is_float32(t):
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_float64(t):
        return st.floats(allow_nan=False)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_string(t):
        return st.text()
    if pa.types.is_binary(t):
        return st.binary()
    if pa.types.is_date32(t):
        return st.dates()
    if pa.types.is_timestamp(t):
        if t.unit == "ms":
            return _UTC_DATETIMES.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
        return _UTC_DATETIMES
    if pa.types.is_decimal(t):
        exact = decimal.Context(prec=t.precision)  # the default context rounds to 28 digits
        unscaled = st.integers(-(10**t.precision) + 1, 10**t.precision - 1)
        return unscaled.map(lambda n: decimal.Decimal(n).scaleb(-t.scale, exact))
    if pa.types.is_list(t):
        return st.lists(_values(t.value_type, t.value_field.nullable), max_size=3)
    if pa.types.is_map(t):
        entries = st.dictionaries(st.text(max_size=4), _values(t.item_type, t.item_field.nullable), max_size=3)
        return entries.map(lambda d: list(d.items()))
    return st.fixed_dictionaries({f.name: _values(f.type, f.nullable) for f in t})


@st.composite
def arrow_tables(draw) -> pa.Table:
    columns = draw(st.dictionaries(_NAMES.map(lambda n: "c_" + n), st.tuples(_TYPES, st.booleans()),
                                   min_size=1, max_size=5))
    meta = [pa.field(name, pa.string()) for name in META_FIELDS]
    schema = pa.schema(meta + [pa.field(name, *type_and_nullable) for name, type_and_nullable in columns.items()])
    row = st.fixed_dictionaries({f.name: _values(f.type, f.nullable) for f in schema})
    rows = draw(st.lists(row, max_size=5))
    return pa.Table.from_pylist(rows, schema=schema)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=arrow_tables())
def test_random_tables_round_trip_through_data_blocks(table):
    avro_schema = arrow_to_avro(table.schema, "t")
    assert avro_to_arrow(avro_schema) == table.schema
    log = avro_data_block(table, avro_schema, INSTANT) + parquet_data_block(table, avro_schema, INSTANT)
    avro_block, parquet_block = read_log_file(log)
    assert avro_block.record_count() == parquet_block.record_count() == table.num_rows
    assert avro_block.records().equals(table)
    assert parquet_block.records().equals(table)
    for block in (avro_block, parquet_block):  # streamed in batches of a record or two: the same rows
        batches = list(block.record_batches(16))
        assert pa.concat_tables(batches).equals(table) if batches else table.num_rows == 0


# ---------------------------------------------------------------------------------------
# Damaged files

INSTANT = "20250101000000000"


def three_blocks() -> list[bytes]:
    return [
        avro_data_block(SAMPLE, SCHEMA, INSTANT),
        delete_block([("a", "p", 1)], INSTANT, "long", SCHEMA),
        rollback_command_block(INSTANT, "20250102000000000"),
    ]


def test_truncated_last_block_is_corrupt_and_earlier_blocks_survive():
    blocks = three_blocks()
    whole = b"".join(blocks)
    intact = len(whole) - len(blocks[-1])
    for cut in range(intact + 1, len(whole)):
        parsed = read_log_file(whole[:cut])
        assert [b.block_type for b in parsed] == [BlockType.AVRO_DATA, BlockType.DELETE, BlockType.CORRUPT]
        assert parsed[1].deleted_keys() == [("a", "p", 1)]
        assert parsed[2].offset == intact and parsed[2].size == cut - intact
        assert parsed[2].content() == whole[intact:cut]


def test_truncated_fixture_log_is_one_corrupt_block(fixtures_dir):
    (path,) = data_log_files(fixtures_dir / "v6_trips_8i1u")
    data = path.read_bytes()
    for cut in (1, 6, 14, 100, len(data) - 9, len(data) - 1):
        assert [b.block_type for b in read_log_file(data[:cut])] == [BlockType.CORRUPT]


def test_crash_then_later_append_keeps_the_following_blocks():
    """A crashed append followed by another writer's complete block, as on HDFS."""
    data, delete, command = three_blocks()
    parsed = read_log_file(data + delete[:50] + command)
    assert [b.block_type for b in parsed] == [BlockType.AVRO_DATA, BlockType.CORRUPT, BlockType.COMMAND]
    assert parsed[1].size == 50
    assert parsed[2].is_rollback


def test_garbage_and_inconsistent_sizes_are_corrupt():
    data, delete, _ = three_blocks()
    assert [b.block_type for b in read_log_file(b"junk" + data)] == [BlockType.CORRUPT, BlockType.AVRO_DATA]
    # A block whose trailing size disagrees with its length is not trusted.
    bad_pointer = data[:-1] + bytes([data[-1] ^ 1])
    assert [b.block_type for b in read_log_file(bad_pointer + delete)] == [
        BlockType.CORRUPT,
        BlockType.DELETE,
    ]
    # Bytes after a block that are not another block make Hudi distrust the block, and us too.
    assert [b.block_type for b in read_log_file(data + b"x" * 20)] == [BlockType.CORRUPT]
    assert read_log_file(b"") == []


def test_headers_are_read_without_reading_content():
    big = pa.Table.from_pylist([SAMPLE.to_pylist()[0]] * 20_000, schema=SAMPLE.schema)
    data = avro_data_block(big, SCHEMA, INSTANT) + rollback_command_block(INSTANT, "20250102000000000")

    class CountingReader(io.BytesIO):
        consumed = 0

        def read(self, size=-1):
            chunk = super().read(size)
            self.consumed += len(chunk)
            return chunk

    source = CountingReader(data)
    blocks = read_log_file(source)
    assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA, BlockType.COMMAND]
    assert source.consumed < len(data) // 10
    assert blocks[0].record_count() == 20_000
    assert blocks[0].records().num_rows == 20_000


@pytest.mark.parametrize("writer", [avro_data_block, parquet_data_block])
def test_a_big_data_block_streams_in_batches_without_reading_it_whole(writer):
    flat = {"type": "record", "name": "t", "fields": [{"name": "id", "type": "string"},
                                                     {"name": "note", "type": ["null", "string"]}]}
    rows = 40_000
    table = pa.table({**{name: pa.array([f"{name}-{i}" for i in range(rows)]) for name in META_FIELDS},
                      "id": [f"k{i:06d}" for i in range(rows)],
                      "note": [f"{i:06d}" * 40 if i % 7 else None for i in range(rows)]},
                     schema=avro_to_arrow(with_meta_fields(flat)))

    class LargestRead(io.BytesIO):
        largest = 0

        def read(self, size=-1):
            chunk = super().read(size)
            self.largest = max(self.largest, len(chunk))
            return chunk

    source = LargestRead(writer(table, flat, INSTANT))
    (block,) = read_log_file(source)
    source.largest = 0
    batches = list(block.record_batches(block.content_length // 8))

    assert len(batches) >= 4
    assert max(b.num_rows for b in batches) < rows // 2
    assert source.largest < block.content_length // 4, "the block's bytes are read a buffer at a time"
    assert pa.concat_tables(batches).equals(block.records())
    assert pa.concat_tables(batches).equals(table)


# ---------------------------------------------------------------------------------------
# Log file names


def test_log_file_name_parse_and_format():
    name = LogFileName.parse("city=sf/.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.12_0-26-85")
    assert name == LogFileName("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "20250331030642808", 12, "0-26-85")
    assert str(name) == ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.12_0-26-85"
    not_log_files = ("f-0_0-13-60_001.parquet", ".f_1.log.x_0-0-0", ".f_1.log.1", "f_1.log.1_0-0-0")
    for bad in not_log_files:
        assert LogFileName.parse(bad) is None


def test_log_file_names_order_like_hudi():
    names = [
        ".f-0_002.log.1_0-1-1",
        ".f-0_001.log.10_0-1-1",
        ".f-0_001.log.2_1-0-1",
        ".f-0_001.log.2_0-13-9",
        ".f-0_001.log.1_9-9-9",
    ]
    ordered = sorted(LogFileName.parse(n) for n in names)
    assert [str(n) for n in ordered] == [
        ".f-0_001.log.1_9-9-9",
        ".f-0_001.log.2_0-13-9",
        ".f-0_001.log.2_1-0-1",
        ".f-0_001.log.10_0-1-1",
        ".f-0_002.log.1_0-1-1",
    ]


# ---------------------------------------------------------------------------------------
# hudi-rs reads what we append to a real MOR v6 table

BASE_INSTANT = "20250331030642808"
SF = "city=san_francisco"
FILE_ID = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
BASE_FILE = f"{FILE_ID}_0-13-60_{BASE_INSTANT}.parquet"
LOG_1 = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-26-85"
UPDATED = "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"  # rider-D: fare 25.0 after the fixture's update
DELETED = "e96c4396-3fad-413a-a942-4cb36106d721"  # rider-C: ts 1695091554788
OTHER = "1dced545-862b-4ceb-8b43-d2a568f6616b"  # rider-E: fare 93.5
T2, T3, T4 = "20250401000000000", "20250401000001000", "20250401000002000"


@pytest.fixture
def trips(fixtures_dir, tmp_path) -> Path:
    table = tmp_path / "v6_trips_8i1u"
    shutil.copytree(fixtures_dir / "v6_trips_8i1u", table)
    return table


def hudi_rs_rows(table: Path) -> dict[str, dict]:
    batches = HudiTableBuilder.from_base_uri(str(table)).build().read()
    return {row["_hoodie_record_key"]: row for row in pa.Table.from_batches(batches).to_pylist()}


def table_schema(table: Path) -> dict:
    commit = json.loads((table / ".hoodie" / "20250331030645735.deltacommit").read_text())
    return json.loads(commit["extraMetadata"]["schema"])


def update(table: Path, instant: str, key: str, fare: float, ts: int) -> pa.Table:
    """The record of `key` in the fixture with a new fare, as a writer logs it."""
    row = dict(hudi_rs_rows(table)[key])
    row.update(
        _hoodie_commit_time=instant,
        _hoodie_commit_seqno=f"{instant}_0_1",
        _hoodie_file_name=FILE_ID,
        fare=fare,
        ts=ts,
    )
    return records_to_arrow([row], with_meta_fields(table_schema(table)))


def append(table: Path, log_name: str, *blocks: bytes) -> int:
    """Append blocks to a log file; the offset they start at."""
    path = table / SF / log_name
    offset = path.stat().st_size if path.exists() else 0
    with path.open("ab") as log:
        log.write(b"".join(blocks))
    return offset


def complete_deltacommit(
    table: Path, instant: str, log_name: str, offset: int, updates: int, deletes: int
) -> None:
    """requested, inflight and completed instant files, shaped like the fixture's."""
    commit = json.loads((table / ".hoodie" / "20250331030645735.deltacommit").read_text())
    (stat,) = commit["partitionToWriteStats"][SF]
    size = (table / SF / log_name).stat().st_size
    stat.update(
        path=f"{SF}/{log_name}",
        prevCommit=BASE_INSTANT,
        numWrites=updates,
        numUpdateWrites=updates,
        numDeletes=deletes,
        totalWriteBytes=size - offset,
        fileSizeInBytes=size,
        logVersion=LogFileName.parse(log_name).version,
        logOffset=offset,
        baseFile=BASE_FILE,
        logFiles=[log_name],
    )
    hoodie = table / ".hoodie"
    (hoodie / f"{instant}.deltacommit.requested").write_text("")
    inflight = {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": "UPSERT"}
    (hoodie / f"{instant}.deltacommit.inflight").write_text(json.dumps(inflight))
    (hoodie / f"{instant}.deltacommit").write_text(json.dumps(commit, indent=2))


# Avro blocks are appended to the slice's existing log file (as Hudi 0.x does where the
# storage can append); Parquet blocks go to a new version of it (where it cannot).
WRITERS = {
    "avro": (avro_data_block, LOG_1),
    "parquet": (parquet_data_block, f".{FILE_ID}_{BASE_INSTANT}.log.2_0-1-1"),
}


def write_update_and_delete(table: Path, kind: str) -> str:
    """Delta commit T2: update UPDATED, delete DELETED. The log file it went to."""
    writer, log_name = WRITERS[kind]
    schema = table_schema(table)
    offset = append(
        table,
        log_name,
        writer(update(table, T2, UPDATED, 99.0, 1695046462180), schema, T2),
        delete_block([(DELETED, SF, None)], T2, "long", schema),
    )
    complete_deltacommit(table, T2, log_name, offset, updates=1, deletes=1)
    return log_name


@pytest.mark.parametrize("kind", WRITERS)
def test_hudi_rs_sees_appended_update_and_delete(trips, kind):
    before = hudi_rs_rows(trips)
    log_name = write_update_and_delete(trips, kind)

    after = hudi_rs_rows(trips)
    assert set(after) == set(before) - {DELETED}
    assert (after[UPDATED]["fare"], after[UPDATED]["_hoodie_commit_time"]) == (99.0, T2)
    for key in set(after) - {UPDATED}:
        assert after[key] == before[key]
    assert [b.block_type for b in read_log_file((trips / SF / log_name).read_bytes())][-2:] == [
        BlockType.AVRO_DATA if kind == "avro" else BlockType.PARQUET_DATA,
        BlockType.DELETE,
    ]


@pytest.mark.parametrize("kind", WRITERS)
def test_hudi_rs_ignores_rolled_back_blocks(trips, kind):
    before = hudi_rs_rows(trips)
    log_name = write_update_and_delete(trips, kind)
    # T2 completed, so only the command block can make readers skip its blocks.
    append(trips, log_name, rollback_command_block(T2, T3))
    assert hudi_rs_rows(trips) == before

    # A later delta commit in the same log file is read as usual.
    writer, _ = WRITERS[kind]
    later = writer(update(trips, T4, OTHER, 11.0, 1695332066205), table_schema(trips), T4)
    offset = append(trips, log_name, later)
    complete_deltacommit(trips, T4, log_name, offset, updates=1, deletes=0)
    after = hudi_rs_rows(trips)
    assert after[OTHER]["fare"] == 11.0
    assert after[UPDATED] == before[UPDATED] and DELETED in after


@pytest.mark.parametrize(
    "ordering_type,ordering_val,deleted",
    [
        ("long", 1695091554789, True),  # newer than the stored record: it wins
        ("long", 1695091554787, False),  # older: the stored record stays
        ("long", None, True),  # no ordering value: deleted regardless
        ("long", 0, False),  # a real (long) 0 is just very old
    ],
)
def test_hudi_rs_event_time_ordering_of_deletes(trips, ordering_type, ordering_val, deleted):
    properties = trips / ".hoodie" / "hoodie.properties"
    event_time = properties.read_text().replace("OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload")
    properties.write_text(event_time)
    deletes = [(DELETED, SF, ordering_val)]
    offset = append(trips, LOG_1, delete_block(deletes, T2, ordering_type, table_schema(trips)))
    complete_deltacommit(trips, T2, LOG_1, offset, updates=0, deletes=1)
    assert (DELETED not in hudi_rs_rows(trips)) == deleted


def test_a_data_block_without_a_schema_is_refused_with_a_clear_error():
    """An Avro data block needs its header's schema to decode: without one, a ValueError that says so
    (it was a TypeError from deep inside fastavro)."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "string"}]}
    full = with_meta_fields(schema)
    rows = pa.table({f["name"]: pa.array(["x"]) for f in full["fields"]})
    [block] = read_log_file(avro_data_block(rows, schema, "20240101000000000"))
    del block.header[HeaderKey.SCHEMA]
    with pytest.raises(ValueError, match="AVRO_DATA block without a schema"):
        block.records()
