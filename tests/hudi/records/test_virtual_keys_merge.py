"""MERGE_ON_READ tables without meta fields (virtual keys): both merges (in memory and bounded, spilling) merge log
records by the key Hudi derives from the record key fields (`RecordContext.virtualKeyExtractor`: one field's
value; several as `field:value,...`), which the delete blocks name. The model: the same records with the derived
key written into `_hoodie_record_key`, merged as tables with meta fields are (tested against Hudi's record
buffer in test_merge_semantics)."""
import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tms.hudi.errors import UnsupportedTableError
from tms.hudi.log_format.log_file import BlockType, _block_bytes, _data_header, avro_data_block, delete_block
from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import merge_records, scan_logs
from tms.hudi.records.merge_rules import MergeRules, merge_rules
from tms.hudi.records.schema import avro_to_arrow, with_meta_fields
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import TableConfig, format_properties
from tms.hudi.table.writer import HudiWriter, create_table_for_records

DATA_SCHEMA = {"type": "record", "name": "t", "fields": [
    {"name": "region", "type": "string"}, {"name": "n", "type": "int"}, {"name": "ts", "type": "long"},
    {"name": "v", "type": ["null", "string"], "default": None}]}
DATA = avro_to_arrow(DATA_SCHEMA)
FULL = avro_to_arrow(with_meta_fields(DATA_SCHEMA))
PAD = "x" * 150
RULES = {
    "one key field, event time": MergeRules(("ts",), key_fields=("n",)),
    "two key fields, event time": MergeRules(("ts",), key_fields=("region", "n")),
    "two key fields, commit time": MergeRules(key_fields=("region", "n")),
}
record = st.tuples(st.sampled_from(["eu", "us", ""]), st.integers(0, 8), st.integers(0, 3))
block = st.one_of(
    st.tuples(st.just("data"), st.lists(record, min_size=1, max_size=8, unique_by=lambda r: r[:2])),
    st.tuples(st.just("delete"), st.lists(record, min_size=1, max_size=4, unique_by=lambda r: r[:2])))


def _key(r: tuple, rules: MergeRules) -> str:
    values = {"region": r[0] or "__empty__", "n": str(r[1])}
    if len(rules.key_fields) == 1:
        return values[rules.key_fields[0]]
    return ",".join(f"{f}:{values[f]}" for f in rules.key_fields)


def _rows(records: list[tuple], instant: str, rules: MergeRules, meta: bool) -> pa.Table:
    data = pa.Table.from_pydict({"region": [r[0] for r in records], "n": [r[1] for r in records],
                                 "ts": [r[2] for r in records],
                                 "v": [f"{instant}-{r[0]}{r[1]}-{PAD}" for r in records]}, schema=DATA)
    if not meta:
        return data
    n = len(records)
    return pa.Table.from_pydict({
        "_hoodie_commit_time": [instant] * n, "_hoodie_commit_seqno": [f"{instant}_{i}" for i in range(n)],
        "_hoodie_record_key": [_key(r, rules) for r in records], "_hoodie_partition_path": [""] * n,
        "_hoodie_file_name": ["f"] * n, **{c: data.column(c) for c in DATA.names}}, schema=FULL)


def _parquet_block(rows: pa.Table, schema: dict, instant: str) -> bytes:
    """A Parquet data block without meta fields."""
    buffer = io.BytesIO()
    pq.write_table(rows, buffer)
    return _block_bytes(BlockType.PARQUET_DATA, _data_header(instant, schema), buffer.getvalue())


def _write_slice(root: Path, base: list[tuple] | None, blocks: list, rules: MergeRules, meta: bool) -> tuple:
    base_file = None
    if base is not None:
        base_file = "base.parquet"
        pq.write_table(_rows(base, "20240101000000000", rules, meta), root / base_file, row_group_size=4)
    content = b""
    for i, (kind, arg) in enumerate(blocks):
        instant = f"2024010200000{i:04d}"
        if kind == "data" and (meta or i % 2 == 0):
            # Avro blocks of a virtual-key table here carry null meta fields, Parquet blocks none (as Hudi writes)
            rows = _rows(arg, instant, rules, True)
            if not meta:
                rows = rows.drop_columns(["_hoodie_record_key"]).add_column(
                    2, "_hoodie_record_key", pa.nulls(rows.num_rows, pa.string()))
            content += avro_data_block(rows, DATA_SCHEMA, instant)
        elif kind == "data":
            content += _parquet_block(_rows(arg, instant, rules, False), DATA_SCHEMA, instant)
        else:
            content += delete_block([(_key(r, rules), "", r[2] if rules.ordering else None) for r in arg], instant,
                                    "long")
    (root / "log.1").write_bytes(content)
    return base_file, ["log.1"]


def _data(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r[c] for c in DATA.names) for r in rows)


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.one_of(st.none(), st.lists(record, max_size=8, unique_by=lambda r: r[:2])),
       blocks=st.lists(block, min_size=1, max_size=5), rules_name=st.sampled_from(sorted(RULES)),
       budget=st.sampled_from([3_000, 64 * 1024 * 1024]))
def test_virtual_keys_merge_as_the_keys_they_derive_would(tmp_path_factory, base, blocks, rules_name, budget):
    rules = RULES[rules_name]
    if len(rules.key_fields) == 1:  # one key field: the records of a key share the other fields' values too
        base = base and [("eu", *r[1:]) for r in base]
        blocks = [(k, [("eu", *r[1:]) for r in a]) for k, a in blocks]
        unique = lambda rs: list({r[1]: r for r in rs}.values())  # noqa: E731
        base = base and unique(base)
        blocks = [(k, unique(a)) for k, a in blocks]
    with_meta = MergeRules(rules.ordering)
    root_meta, root = tmp_path_factory.mktemp("meta"), tmp_path_factory.mktemp("virtual")
    base_meta, logs_meta = _write_slice(root_meta, base, blocks, rules, True)
    storage_meta = LocalStorage(str(root_meta))
    expected = _data(merge_records(pq.read_table(root_meta / base_meta) if base_meta else None,
                                   scan_logs(storage_meta, logs_meta, lambda i: True, FULL), with_meta,
                                   FULL).to_pylist())

    base_file, logs = _write_slice(root, base, blocks, rules, False)
    storage = LocalStorage(str(root))
    in_memory = merge_records(pq.read_table(root / base_file) if base_file else None,
                              scan_logs(storage, logs, lambda i: True, FULL, rules), rules, FULL)
    assert _data(in_memory.to_pylist()) == expected
    out: list[pa.Table] = []
    BoundedMerge(storage, base_file, logs, lambda i: True, rules, FULL, budget_bytes=budget).run(out.append)
    assert _data(pa.concat_tables(out).to_pylist() if out else []) == expected


V = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.populate.meta.fields": "false"}


@pytest.mark.parametrize("props,words", [
    ({**V, "hoodie.table.version": "6", "hoodie.table.recordkey.fields": "region,n"}, "on version 6 from one"),
    ({**V, "hoodie.table.version": "8", "hoodie.table.recordkey.fields": "n"}, "on table version 8"),
    ({**V, "hoodie.table.version": "9"}, "names no record key fields"),
])
def test_virtual_keys_tms_cannot_derive_as_hudi_does_are_refused_in_one_line(props, words):
    with pytest.raises(UnsupportedTableError, match=words) as raised:
        merge_rules(TableConfig(props))
    assert "\n" not in str(raised.value)


def test_the_rules_of_a_virtual_key_table_name_its_record_key_fields():
    config = TableConfig({**V, "hoodie.table.version": "9", "hoodie.table.recordkey.fields": "region,n",
                          "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    assert merge_rules(config) == MergeRules(key_fields=("region", "n"))


def test_a_key_field_whose_java_text_tms_cannot_reproduce_is_refused(tmp_path):
    rules = MergeRules(key_fields=("ts",))
    schema = {**DATA_SCHEMA, "fields": [*DATA_SCHEMA["fields"][:2],
                                        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                                        DATA_SCHEMA["fields"][3]]}
    rows = _rows([("eu", 1, 2)], "20240102000000001", rules, False)
    rows = rows.set_column(2, "ts", rows.column("ts").cast(pa.timestamp("us", tz="UTC")))
    (tmp_path / "log.1").write_bytes(_parquet_block(rows, schema, "20240102000000001"))
    storage = LocalStorage(str(tmp_path))
    target = avro_to_arrow(with_meta_fields(schema))
    with pytest.raises(UnsupportedTableError, match="record key field ts is of type timestamp"):
        merge_records(None, scan_logs(storage, ["log.1"], lambda i: True, target, rules), rules, target)
    with pytest.raises(UnsupportedTableError, match="record key field ts is of type timestamp"):
        BoundedMerge(storage, None, ["log.1"], lambda i: True, rules, target).run(lambda rows: None)


def test_tms_writer_refuses_a_virtual_key_merge_on_read_table_before_writing(tmp_path):
    path = tmp_path / "t"
    records = [{"id": 1, "ts": 1, "name": "a"}]
    create_table_for_records(str(path), records, table_type="MERGE_ON_READ", version=9, key=["id"], ordering=["ts"],
                             partition=[]).write(records, "upsert")
    config = HudiTable.load(str(path)).config.props
    (path / ".hoodie" / "hoodie.properties").write_text(
        format_properties({**config, "hoodie.populate.meta.fields": "false"}))
    before = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())
    with pytest.raises(UnsupportedTableError, match="virtual keys"):
        HudiWriter(HudiTable.load(str(path))).write([{"id": 1, "ts": 2, "name": "b"}], "upsert")
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == before
