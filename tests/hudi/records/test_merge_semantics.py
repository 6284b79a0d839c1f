"""Both merges (in memory and bounded, spilling) give the rows of a model of Hudi 1.1's record buffer
(`BufferedRecordMergerFactory`, `FileGroupRecordBuffer`), written from its Java sources as a fold of one record
at a time (and of Hudi 0.15's log scanner, which folds by ordering value under commit-time ordering too):
commit-time and event-time ordering, one ordering field (int or long) or several (compared in order), delete
blocks (natural deletes: Java's Integer 0), data records deleted by `_hoodie_is_deleted` or by a custom delete
marker, rolled-back blocks."""
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_slices import write_log_files

from tms.hudi.errors import UnsupportedTableError
from tms.hudi.log_format.log_file import (
    delete_block,
)
from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import merge_records, scan_logs
from tms.hudi.records.merge_rules import MergeRules, merge_rules
from tms.hudi.records.schema import avro_to_arrow, with_meta_fields
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.properties import TableConfig

DATA_SCHEMA = {"type": "record", "name": "t", "fields": [
    {"name": "id", "type": "string"},
    {"name": "ts", "type": "long"}, {"name": "seq", "type": "int"},
    {"name": "op", "type": ["null", "string"], "default": None},
    {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None},
    {"name": "v", "type": ["null", "string"], "default": None}]}
ARROW = avro_to_arrow(with_meta_fields(DATA_SCHEMA))
AVRO_TYPE = {"ts": "long", "seq": "int"}
PAD = "x" * 150  # wide rows: a tiny budget spills after a few records

RULES = {
    "commit time": MergeRules(),
    "commit time, delete marker Op = D (AWS DMS)": MergeRules((), "op", "D"),
    "event time, long field": MergeRules(("ts",)),
    "event time, int field": MergeRules(("seq",)),
    "event time, two fields, delete marker": MergeRules(("ts", "seq"), "op", "d"),
    # Hudi 0.x (table version 6), commit-time ordering with a precombine field: its log is folded by ordering value
    "v6 commit time, precombine field": MergeRules(("ts",), base_loses=True),
}

# A data record: (key, ts, seq, how it is a delete: "" not, "flag" _hoodie_is_deleted, "marker" the op field)
record = st.tuples(st.integers(0, 25), st.integers(0, 3), st.integers(0, 2),
                   st.sampled_from(["", "", "flag", "marker"]))
block = st.one_of(
    st.tuples(st.just("data"), st.lists(record, min_size=1, max_size=12, unique_by=lambda r: r[0])),
    st.tuples(st.just("delete"), st.lists(st.tuples(st.integers(0, 25), st.one_of(st.none(), st.integers(0, 3))),
                                          min_size=1, max_size=6, unique_by=lambda r: r[0])),
    st.tuples(st.just("rollback"), st.integers(0, 6)))


def _rows(records: list[tuple[int, int, int, str]], instant: str, rules: MergeRules) -> pa.Table:
    n = len(records)
    marker = rules.delete_marker or "D"
    return pa.Table.from_pydict({
        "_hoodie_commit_time": [instant] * n, "_hoodie_commit_seqno": [f"{instant}_{i}" for i in range(n)],
        "_hoodie_record_key": [f"k{k:03d}" for k, *_ in records], "_hoodie_partition_path": [""] * n,
        "_hoodie_file_name": ["f"] * n, "id": [f"k{k:03d}" for k, *_ in records],
        "ts": [r[1] for r in records], "seq": [r[2] for r in records],
        "op": [marker if r[3] == "marker" else "U" for r in records],
        "_hoodie_is_deleted": [True if r[3] == "flag" else (False if r[0] % 2 else None) for r in records],
        "v": [f"{instant}-{r[0]}-{PAD}" for r in records]}, schema=ARROW)


def _delete_ordering(rules: MergeRules) -> Any:
    """The Avro type of a delete's ordering value: of several ordering fields, a tuple (Hudi 1.1's ArrayWrapper)."""
    if len(rules.ordering) > 1:
        return tuple(AVRO_TYPE[f] for f in rules.ordering)
    return AVRO_TYPE[rules.ordering[0]] if rules.ordering else "int"


def _delete_value(o: int | None, rules: MergeRules) -> Any:
    """A delete's ordering value in a delete block: of two ordering fields, (ts, seq) = (o, o % 3)."""
    return (o, o % 3) if o is not None and len(rules.ordering) > 1 else o


def _write_slice(root: Path, base_keys: list[int] | None, blocks: list, rules: MergeRules) -> tuple[str | None, list]:
    base = None
    if base_keys is not None:
        base = "base.parquet"
        pq.write_table(_rows([(k, k % 4, k % 3, "") for k in base_keys], "20240101000000000", rules), root / base,
                       row_group_size=5)
    logs = write_log_files(root, blocks, lambda arg, instant: _rows(arg, instant, rules),
                           lambda arg: [(f"k{k:03d}", "", _delete_value(o, rules)) for k, o in arg], DATA_SCHEMA,
                           _delete_ordering(rules))
    return base, logs


# --- the model: Hudi's buffer, one record at a time --------------------------------------------------------------

DEFAULT = ("Integer", 0)  # OrderingValues.DEFAULT_VALUE


@dataclass
class _Rec:
    ordering: tuple  # (Java class, value)
    delete: bool
    row: dict | None

    @property
    def commit_time_delete(self) -> bool:  # BufferedRecord.isCommitTimeOrderingDelete
        return self.delete and self.ordering == DEFAULT


def _java_ordering(row: dict, rules: MergeRules) -> tuple:
    if not rules.ordering:
        return DEFAULT
    values = [("Long" if AVRO_TYPE[f] == "long" else "Integer", row[f]) for f in rules.ordering]
    return values[0] if len(values) == 1 else ("ArrayComparable", tuple(v for _, v in values))


def _compare(a: tuple, b: tuple) -> int:
    assert a[0] == b[0], f"Java would fail comparing {a} with {b}"
    return (a[1] > b[1]) - (a[1] < b[1])


def _keep_newer(old: _Rec, new: _Rec) -> bool:  # shouldKeepNewerRecord
    if new.commit_time_delete or old.commit_time_delete:
        return True
    return _compare(new.ordering, old.ordering) >= 0


def _model(base: list[dict], blocks: list, rules: MergeRules) -> list[dict]:
    rolled_back = {f"2024010200000{arg:04d}" for kind, arg in blocks if kind == "rollback"}
    buffer: dict[str, _Rec] = {}
    event_time = bool(rules.ordering)
    for i, (kind, arg) in enumerate(blocks):
        if kind == "rollback" or f"2024010200000{i:04d}" in rolled_back:
            continue
        if kind == "data":
            for row in _rows(arg, f"2024010200000{i:04d}", rules).to_pylist():
                deleted = bool(row["_hoodie_is_deleted"]) or (rules.delete_field is not None
                                                              and row[rules.delete_field] == rules.delete_marker)
                new = _Rec(_java_ordering(row, rules), deleted, row)
                old = buffer.get(row["_hoodie_record_key"])
                if old is None or not event_time or _keep_newer(old, new):  # deltaMerge
                    buffer[row["_hoodie_record_key"]] = new
        else:
            for k, o in arg:
                key = f"k{k:03d}"
                if len(rules.ordering) > 1:
                    java = DEFAULT if o is None else ("ArrayComparable", _delete_value(o, rules))
                else:
                    java = DEFAULT if o is None or (o == 0 and _delete_ordering(rules) == "int") else (
                        "Long" if _delete_ordering(rules) == "long" else "Integer", o)
                delete, old = _Rec(java, True, None), buffer.get(key)
                if old is None or not event_time:
                    buffer[key] = delete
                elif old.commit_time_delete:  # deltaMergeDeleteRecord
                    continue
                elif not (delete.ordering != DEFAULT and old.ordering[0] == delete.ordering[0]
                          and _compare(old.ordering, delete.ordering) > 0):
                    buffer[key] = delete
    out = []
    for row in base:
        log = buffer.pop(row["_hoodie_record_key"], None)
        if log is None:
            out.append(row)
            continue
        base_loses = not event_time or rules.base_loses  # Hudi 0.x's OverwriteWithLatestAvroPayload: the log's
        won = log if base_loses or _keep_newer(_Rec(_java_ordering(row, rules), False, row), log) else None
        if won is None:
            out.append(row)
        elif won.row is not None and not won.delete:
            out.append(won.row)
    out += [r.row for r in buffer.values() if r.row is not None and not r.delete]
    return out


def _key_sorted(rows: list[dict]) -> list[tuple]:
    return sorted((r["_hoodie_record_key"], r["v"]) for r in rows)


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base_keys=st.one_of(st.none(), st.lists(st.integers(0, 25), max_size=20, unique=True)),
       blocks=st.lists(block, min_size=1, max_size=7), rules_name=st.sampled_from(sorted(RULES)),
       budget=st.sampled_from([4_000, 64 * 1024 * 1024]))
def test_both_merges_give_the_rows_of_hudis_record_buffer(tmp_path_factory, base_keys, blocks, rules_name, budget):
    rules = RULES[rules_name]
    # Only natural deletes in delete blocks: none can order a delete by several fields, and Hudi 0.15 folds a
    # delete carrying an ordering value unlike Hudi 1.1 (TMS follows Hudi 1.1 there: see the report of issue 26).
    if len(rules.ordering) > 1 or rules.base_loses:
        blocks = [(k, [(key, None) for key, _ in a]) if k == "delete" else (k, a) for k, a in blocks]
    root = tmp_path_factory.mktemp("slice")
    base, logs = _write_slice(root, base_keys, blocks, rules)
    base_table = pq.read_table(root / base) if base else None
    expected = _key_sorted(_model(base_table.to_pylist() if base_table is not None else [], blocks, rules))

    storage = LocalStorage(str(root))
    valid = lambda instant: True  # noqa: E731
    in_memory = merge_records(base_table, scan_logs(storage, logs, valid, ARROW), rules, ARROW)
    assert _key_sorted(in_memory.to_pylist()) == expected
    out: list[pa.Table] = []
    BoundedMerge(storage, base, logs, valid, rules, ARROW, budget_bytes=budget).run(out.append)
    assert _key_sorted(pa.concat_tables(out).to_pylist() if out else []) == expected


def test_a_natural_delete_superseded_by_an_older_write_leaves_the_base_row(tmp_path):
    # Hudi's buffer: the delete, then the write ts=1 replaces it; the final merge keeps the base row (ts=3)
    rules = RULES["event time, long field"]
    blocks = [("delete", [(3, None)]), ("data", [(3, 1, 0, "")])]
    base, logs = _write_slice(tmp_path, [3], blocks, rules)
    storage = LocalStorage(str(tmp_path))
    rows = merge_records(pq.read_table(tmp_path / base), scan_logs(storage, logs, lambda i: True, ARROW), rules,
                         ARROW).to_pylist()
    assert [(r["ts"], r["_hoodie_commit_time"]) for r in rows] == [(3, "20240101000000000")]


def test_two_ordering_fields_compare_in_order(tmp_path):
    # (ts, seq): (2, 0) beats (1, 2), and (2, 1) beats (2, 0) though it was written first
    rules = MergeRules(("ts", "seq"))
    blocks = [("data", [(1, 2, 1, ""), (2, 1, 2, "")]), ("data", [(1, 1, 2, ""), (2, 2, 0, "")])]
    base, logs = _write_slice(tmp_path, None, blocks, rules)
    storage = LocalStorage(str(tmp_path))
    out: list[pa.Table] = []
    BoundedMerge(storage, None, logs, lambda i: True, rules, ARROW, budget_bytes=1).run(out.append)
    got = {r["id"]: (r["ts"], r["seq"]) for r in pa.concat_tables(out).to_pylist()}
    assert got == {"k001": (2, 1), "k002": (2, 0)}


def test_a_delete_block_ordered_by_one_value_on_a_table_of_two_ordering_fields_is_refused(tmp_path):
    rules = MergeRules(("ts", "seq"))
    (tmp_path / "log.1").write_bytes(delete_block([("k001", "", 5)], "20240102000000001", "long"))
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(UnsupportedTableError, match="orders by 2 fields"):
        merge_records(None, scan_logs(storage, ["log.1"], lambda i: True, ARROW), rules, ARROW)
    with pytest.raises(UnsupportedTableError, match="orders by 2 fields"):
        BoundedMerge(storage, None, ["log.1"], lambda i: True, rules, ARROW).run(lambda rows: None)


# --- the rules of tables Hudi 1.1 created with a payload class (inferMergingConfigsForV9TableCreation)

V9 = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "9"}
MERGE_PROPERTY = "hoodie.record.merge.property.hoodie.payload."


def test_aws_dms_tables_merge_by_commit_time_and_delete_on_op_d():
    config = TableConfig({**V9, "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
                          "hoodie.legacy.payload.class": "org.apache.hudi.common.model.AWSDmsAvroPayload",
                          MERGE_PROPERTY + "delete.field": "Op", MERGE_PROPERTY + "delete.marker": "D"})
    assert merge_rules(config) == MergeRules((), "Op", "D")


def test_mysql_debezium_tables_order_by_binlog_file_and_position_and_delete_on_op_d():
    config = TableConfig({**V9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                          "hoodie.table.ordering.fields": "_event_bin_file,_event_pos",
                          "hoodie.legacy.payload.class":
                              "org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload",
                          MERGE_PROPERTY + "delete.field": "_change_operation_type",
                          MERGE_PROPERTY + "delete.marker": "d"})
    assert merge_rules(config) == MergeRules(("_event_bin_file", "_event_pos"), "_change_operation_type", "d")


@pytest.mark.parametrize("props,word", [
    ({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING", MERGE_PROPERTY + "delete.field": "Op"}, "only one of"),
])
def test_a_delete_field_without_its_marker_is_refused_in_one_line(props, word):
    config = TableConfig({**V9, **props})
    with pytest.raises(UnsupportedTableError, match=word) as raised:
        merge_rules(config)
    assert "\n" not in str(raised.value)


def test_v6_tables_fold_their_logs_by_ordering_value_under_commit_time():
    v6 = {**V9, "hoodie.table.version": "6", "hoodie.table.precombine.field": "ts"}
    overwrite = TableConfig({**v6, "hoodie.compaction.payload.class":
                             "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"})
    assert merge_rules(overwrite) == MergeRules(("ts",), base_loses=True, partial_blocks=False)
    default = TableConfig({**v6, "hoodie.compaction.payload.class":
                           "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})
    assert merge_rules(default) == MergeRules(("ts",), partial_blocks=False)
    no_precombine = {k: v for k, v in v6.items() if k != "hoodie.table.precombine.field"}
    assert merge_rules(TableConfig(no_precombine)) == MergeRules(partial_blocks=False)
