"""Hudi 1.1's partial-update log blocks (header IS_PARTIAL: records holding the meta fields and some columns, as
Spark SQL's `MERGE INTO ... UPDATE SET` writes them): both merges (in memory, and bounded with spilling forced) give
the rows of a model written from Hudi 1.1.1's Java, one record at a time: the record buffer merges as the table's
merge mode does until it meets the first partial block, then with `HoodieRecordMerger.partialMerge`
(`DefaultSparkRecordMerger`, `OverwriteWithLatestSparkRecordMerger`: `SparkRecordMergingUtils.mergePartialRecords`)
for the records after it and for the merge with the base row. What TMS refuses, the model refuses too."""
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_slices import write_three_to_a_file

from tms.hudi.errors import UnsupportedTableError
from tms.hudi.log_format.log_file import (
    BlockType,
    HeaderKey,
    _block_bytes,
    avro_data_block,
    delete_block,
    read_log_file,
    rollback_command_block,
)
from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import merge_records, scan_logs
from tms.hudi.records.merge_rules import MergeRules, PartialMode, merge_rules
from tms.hudi.records.schema import avro_to_arrow, with_meta_fields
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.properties import TableConfig

COLUMNS = ("a", "b", "c")
DATA_SCHEMA = {"type": "record", "name": "t", "fields": [
    {"name": "id", "type": "string"}, {"name": "ts", "type": "long"},
    {"name": "a", "type": ["null", "string"], "default": None},
    {"name": "b", "type": ["null", "long"], "default": None},
    {"name": "c", "type": ["null", "string"], "default": None},
    {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None}]}
ARROW = avro_to_arrow(with_meta_fields(DATA_SCHEMA))
PAD = "x" * 150  # wide rows: a tiny budget spills after a few records
RULES = {"event time": MergeRules(("ts",)), "commit time": MergeRules()}

# a record: (key, ts, a data delete); a full block's records hold every column, a partial block's its columns
record = st.tuples(st.integers(0, 9), st.integers(0, 3), st.sampled_from([False, False, False, True]))
records = st.lists(record, min_size=1, max_size=8, unique_by=lambda r: r[0])
block = st.one_of(
    st.tuples(st.just("full"), records),
    st.tuples(st.sampled_from([("a",), ("b",), ("a", "c"), ("b", "c")]), records.map(
        lambda rs: [(k, ts, False) for k, ts, _ in rs])),
    st.tuples(st.sampled_from([("a",), ("b", "c")]), records.map(lambda rs: [(k, ts, False) for k, ts, _ in rs])),
    st.tuples(st.just("delete"), st.lists(st.tuples(st.integers(0, 9), st.one_of(st.none(), st.integers(0, 3))),
                                          min_size=1, max_size=4, unique_by=lambda r: r[0])),
    st.tuples(st.just("rollback"), st.integers(0, 6)))


def _instant(i: int) -> str:
    return f"2024010200000{i:04d}"


def _schema(held: tuple[str, ...] | None) -> dict:
    if held is None:
        return DATA_SCHEMA
    return {**DATA_SCHEMA, "fields": [f for f in DATA_SCHEMA["fields"] if f["name"] in ("ts", *held)]}


def _rows(recs: list[tuple], instant: str, held: tuple[str, ...] | None) -> pa.Table:
    names = [f["name"] for f in with_meta_fields(_schema(held))["fields"]]
    values = {
        "_hoodie_commit_time": [instant] * len(recs),
        "_hoodie_commit_seqno": [f"{instant}_{i}" for i in range(len(recs))],
        "_hoodie_record_key": [f"k{k}" for k, _, _ in recs], "_hoodie_partition_path": [""] * len(recs),
        "_hoodie_file_name": ["f"] * len(recs), "id": [f"k{k}" for k, _, _ in recs], "ts": [ts for _, ts, _ in recs],
        "a": [f"{instant}-{k}-{PAD}" for k, _, _ in recs], "b": [int(instant[-4:]) * 100 + k for k, _, _ in recs],
        "c": [None if k % 3 == 0 else f"c{instant[-2:]}{k}" for k, _, _ in recs],  # a partial update may set a null
        "_hoodie_is_deleted": [d for _, _, d in recs]}
    return pa.table({n: values[n] for n in names}, schema=pa.schema([ARROW.field(n) for n in names]))


def partial_block(rows: pa.Table, held: tuple[str, ...], instant: str) -> bytes:
    """An Avro data block of the rows' fields (the meta fields, ts and `held`) with the IS_PARTIAL header."""
    (data,) = read_log_file(avro_data_block(rows, _schema(held), instant))
    return _block_bytes(BlockType.AVRO_DATA, {**data.header, HeaderKey.IS_PARTIAL: "true"}, data.content())


def _write_slice(root: Path, base_keys: list[int] | None, blocks: list) -> tuple[str | None, list[str]]:
    base = None
    if base_keys is not None:
        base = "base.parquet"
        pq.write_table(_rows([(k, k % 3, False) for k in base_keys], "20240101000000000", None), root / base,
                       row_group_size=4)
    contents = []
    for i, (kind, arg) in enumerate(blocks):
        if kind == "full":
            contents.append(avro_data_block(_rows(arg, _instant(i), None), DATA_SCHEMA, _instant(i)))
        elif kind == "delete":
            contents.append(delete_block([(f"k{k}", "", o) for k, o in arg], _instant(i), "long"))
        elif kind == "rollback":
            contents.append(rollback_command_block(_instant(arg), _instant(i)))
        else:
            contents.append(partial_block(_rows(arg, _instant(i), kind), kind, _instant(i)))
    return base, write_three_to_a_file(root, contents)


# --- the model: Hudi 1.1.1's Java, one record at a time -----------------------------------------------------------

class Refused(Exception):
    pass


DEFAULT = ("Integer", 0)  # OrderingValues.DEFAULT_VALUE


@dataclass
class _Rec:
    ordering: tuple
    delete: bool
    row: dict | None  # the fields the record holds; None: a delete block's delete

    @property
    def commit_time_delete(self) -> bool:
        return self.delete and self.ordering == DEFAULT


def _newer_wins(old: _Rec, new: _Rec) -> bool:  # shouldKeepNewerRecord
    return new.commit_time_delete or old.commit_time_delete or new.ordering[1] >= old.ordering[1]


def _merge_partial_records(older: _Rec, newer: _Rec) -> _Rec:  # SparkRecordMergingUtils.mergePartialRecords
    assert older.row is not None and newer.row is not None
    if set(newer.row) >= set(older.row):
        return newer
    fields = [f for f in ARROW.names if f in newer.row or f in older.row]
    return _Rec(newer.ordering, newer.delete, {f: newer.row[f] if f in newer.row else older.row[f] for f in fields})


def _partial_merge(older: _Rec, newer: _Rec, event_time: bool) -> _Rec:
    if not event_time:  # OverwriteWithLatestSparkRecordMerger.partialMerge
        if newer.delete:
            return newer
        if older.delete:  # fills from the deleted row, or fails on a delete block's (no row): TMS refuses both
            raise Refused
        return _merge_partial_records(older, newer)
    if older.commit_time_delete or newer.commit_time_delete:  # DefaultSparkRecordMerger.partialMerge
        return newer
    if older.ordering[1] > newer.ordering[1]:
        return older if older.delete or newer.delete else _merge_partial_records(newer, older)
    return newer if newer.delete or older.delete else _merge_partial_records(older, newer)


def _model(base: list[dict], blocks: list, rules: MergeRules) -> list[dict]:
    event_time = bool(rules.ordering)
    rolled_back = {_instant(arg) for kind, arg in blocks if kind == "rollback"}
    buffer: dict[str, _Rec] = {}
    partial = False  # FileGroupRecordBuffer.enablePartialMerging
    for i, (kind, arg) in enumerate(blocks):
        if kind == "rollback" or _instant(i) in rolled_back:
            continue
        if kind == "delete":  # the table's merger without partial update mode, before and after the switch
            for k, o in arg:
                new, old = _Rec(DEFAULT if o is None else ("Long", o), True, None), buffer.get(f"k{k}")
                if old is None or not event_time or not old.commit_time_delete and not (
                        new.ordering != DEFAULT and old.ordering[0] == "Long" and old.ordering[1] > new.ordering[1]):
                    buffer[f"k{k}"] = new
            continue
        held = None if kind == "full" else kind
        partial = partial or held is not None
        for row in _rows(arg, _instant(i), held).to_pylist():
            new = _Rec(("Long", row["ts"]) if event_time else DEFAULT, bool(row.get("_hoodie_is_deleted")), row)
            old = buffer.get(row["_hoodie_record_key"])
            if old is None:
                buffer[row["_hoodie_record_key"]] = new
            elif partial:
                buffer[row["_hoodie_record_key"]] = _partial_merge(old, new, event_time)
            elif not event_time or _newer_wins(old, new):
                buffer[row["_hoodie_record_key"]] = new
    out = []
    for row in base:
        log = buffer.pop(row["_hoodie_record_key"], None)
        if log is None:
            out.append(row)
            continue
        base_rec = _Rec(("Long", row["ts"]) if event_time else DEFAULT, False, row)
        if partial:
            won = _partial_merge(base_rec, log, event_time)
        else:
            won = log if not event_time or _newer_wins(base_rec, log) else base_rec
        if not won.delete:
            out.append(won.row)
    for log in buffer.values():
        if not log.delete:
            assert log.row is not None
            if len(log.row) < len(ARROW):
                raise Refused  # a partial update with nothing to fill its other columns
            out.append(log.row)
    return out


def _sorted(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r[f] for f in ARROW.names if f != "_hoodie_file_name") for r in rows)


def _in_memory(root: Path, base: str | None, logs: list[str], rules: MergeRules) -> list[tuple]:
    storage = LocalStorage(str(root))
    base_table = pq.read_table(root / base) if base else None
    return _sorted(merge_records(base_table, scan_logs(storage, logs, lambda i: True, ARROW, rules), rules,
                                 ARROW).to_pylist())


def _bounded(root: Path, base: str | None, logs: list[str], rules: MergeRules, budget: int) -> list[tuple]:
    out: list[pa.Table] = []
    BoundedMerge(LocalStorage(str(root)), base, logs, lambda i: True, rules, ARROW, budget_bytes=budget).run(
        out.append)
    return _sorted(pa.concat_tables(out).to_pylist() if out else [])


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base_keys=st.one_of(st.none(), st.lists(st.integers(0, 9), min_size=6, max_size=10, unique=True)),
       blocks=st.lists(block, min_size=1, max_size=7), rules_name=st.sampled_from(sorted(RULES)),
       budget=st.sampled_from([4_000, 64 * 1024 * 1024]))
def test_both_merges_give_the_rows_of_hudis_merge_of_partial_update_blocks(tmp_path_factory, base_keys, blocks,
                                                                            rules_name, budget):
    rules = RULES[rules_name]
    root = tmp_path_factory.mktemp("slice")
    base, logs = _write_slice(root, base_keys, blocks)
    base_rows = pq.read_table(root / base).to_pylist() if base else []
    try:
        expected = _sorted(_model(base_rows, blocks, rules))
    except Refused:
        for merge in (lambda: _in_memory(root, base, logs, rules), lambda: _bounded(root, base, logs, rules, budget)):
            with pytest.raises(UnsupportedTableError) as raised:
                merge()
            assert "\n" not in str(raised.value)
        return
    assert _in_memory(root, base, logs, rules) == expected
    assert _bounded(root, base, logs, rules, budget) == expected


def test_partial_updates_keep_the_older_values_of_the_columns_they_lack_when_the_merge_spills(tmp_path):
    # 40 keys: a base row each, a full update of the even ones, then two partial updates of other columns
    keys = list(range(40))
    blocks = [("full", [(k, 1, False) for k in keys if k % 2 == 0]), (("a",), [(k, 2, False) for k in keys]),
              (("b", "c"), [(k, 3, False) for k in keys if k % 3]), ("delete", [(5, None)])]
    base = "base.parquet"
    pq.write_table(_rows([(k, 0, False) for k in keys], "20240101000000000", None), tmp_path / base)
    _, logs = _write_slice(tmp_path, None, blocks)
    rules = RULES["event time"]
    storage = LocalStorage(str(tmp_path))
    out: list[pa.Table] = []
    stats = BoundedMerge(storage, base, logs, lambda i: True, rules, ARROW, budget_bytes=8_000).run(out.append)
    assert stats.buckets > 1 and stats.spilled_bytes, "the merge spilled"
    rows = {r["id"]: r for r in pa.concat_tables(out).to_pylist()}
    assert len(rows) == 39 and "k5" not in rows
    assert (rows["k4"]["a"][:20], rows["k4"]["b"], rows["k4"]["c"], rows["k4"]["ts"]) == (
        _instant(1) + "-4-", 100 * 2 + 4, "c024", 3)  # a from the first partial, b and c from the second
    assert (rows["k3"]["a"][:20], rows["k3"]["b"], rows["k3"]["ts"]) == (_instant(1) + "-3-", 3, 2)  # b: the base's
    assert rows["k3"]["_hoodie_commit_time"] == _instant(1)  # the meta fields of the record that won last
    assert _sorted(list(rows.values())) == _in_memory(tmp_path, base, logs, rules)


@pytest.mark.parametrize("props,words", [
    ({"hoodie.table.version": "8"}, "table version 9"),
    ({"hoodie.table.partial.update.mode": "IGNORE_DEFAULTS"}, "partial update mode IGNORE_DEFAULTS"),
])
def test_partial_update_blocks_are_refused_where_hudi_1_1_does_not_merge_them_so(tmp_path, props, words):
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "9",
                          "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts",
                          **props})
    rules = merge_rules(config)
    _, logs = _write_slice(tmp_path, None, [(("a",), [(1, 1, False)])])
    storage = LocalStorage(str(tmp_path))
    for merge in (lambda: scan_logs(storage, logs, lambda i: True, ARROW, rules),
                  lambda: BoundedMerge(storage, None, logs, lambda i: True, rules, ARROW).run(lambda rows: None)):
        with pytest.raises(UnsupportedTableError, match=words) as raised:
            merge()
        assert "\n" not in str(raised.value)


def test_a_table_cannot_configure_the_partial_mode_of_partial_update_blocks():
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "9",
                          "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
                          "hoodie.table.partial.update.mode": PartialMode.KEEP_VALUES.value})
    with pytest.raises(UnsupportedTableError, match="does not know"):
        merge_rules(config)
