"""Partial merges: both merges (in memory and bounded, spilling) give the rows of a model written from Hudi's Java
sources, one record at a time: Hudi 1.1's partial update modes (`PartialUpdateHandler` inside
`CommitTimePartialRecordMerger` / `EventTimePartialRecordMerger`: IGNORE_DEFAULTS, FILL_UNAVAILABLE) and Hudi
0.15's payloads on table version 6 (`OverwriteNonDefaultsWithLatestAvroPayload`, `PartialUpdateAvroPayload`:
their preCombine over the log, then combineAndGetUpdateValue with the base row)."""
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
from tms.hudi.log_format.log_file import avro_data_block
from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import merge_records, scan_logs
from tms.hudi.records.merge_rules import LegacyPartial, MergeRules, PartialMode, merge_rules
from tms.hudi.records.schema import avro_to_arrow, with_meta_fields
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import TableConfig, format_properties
from tms.hudi.table.writer import HudiWriter, create_table_for_records

DATA_SCHEMA = {"type": "record", "name": "t", "fields": [
    {"name": "id", "type": "string"},
    {"name": "ts", "type": "long"}, {"name": "seq", "type": "int"},
    {"name": "op", "type": ["null", "string"], "default": None},
    {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None},
    {"name": "v", "type": ["null", "string"], "default": None},
    {"name": "w", "type": ["null", "long"], "default": None}]}
ARROW = avro_to_arrow(with_meta_fields(DATA_SCHEMA))
META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name")
UNAVAILABLE = "__debezium_unavailable_value"
PAD = "x" * 150  # wide rows: a tiny budget spills after a few records
IGNORE, FILL = PartialMode.IGNORE_DEFAULTS, PartialMode.FILL_UNAVAILABLE

RULES = {
    "1.1 commit time, IGNORE_DEFAULTS (OverwriteNonDefaults)": MergeRules(partial=IGNORE),
    "1.1 event time, IGNORE_DEFAULTS (PartialUpdate)": MergeRules(("ts",), partial=IGNORE),
    "1.1 event time by an int, IGNORE_DEFAULTS": MergeRules(("seq",), partial=IGNORE),
    "1.1 event time, two fields, delete marker, IGNORE_DEFAULTS": MergeRules(("ts", "seq"), "op", "d",
                                                                              partial=IGNORE),
    "1.1 event time, FILL_UNAVAILABLE, delete marker (Postgres Debezium)": MergeRules(
        ("ts",), "op", "d", partial=FILL, unavailable_value=UNAVAILABLE),
    "1.1 commit time, FILL_UNAVAILABLE": MergeRules(partial=FILL, unavailable_value=UNAVAILABLE),
    "0.15 OverwriteNonDefaults, precombine field": MergeRules(
        ("ts",), base_loses=True, partial=IGNORE, legacy_partial=LegacyPartial.OVERWRITE_NON_DEFAULTS),
    "0.15 OverwriteNonDefaults, no precombine field": MergeRules(
        partial=IGNORE, legacy_partial=LegacyPartial.OVERWRITE_NON_DEFAULTS),
    "0.15 PartialUpdate": MergeRules(("ts",), partial=IGNORE, legacy_partial=LegacyPartial.PARTIAL_UPDATE),
}

# A data record: (key, ts, seq, how it is a delete: "" not, "flag" _hoodie_is_deleted, "marker" the op field,
# which of v (1) and w (2) it leaves unset)
record = st.tuples(st.integers(0, 12), st.integers(0, 3), st.integers(0, 2),
                   st.sampled_from(["", "", "", "flag", "marker"]), st.integers(0, 3))
block = st.one_of(
    st.tuples(st.just("data"), st.lists(record, min_size=1, max_size=10, unique_by=lambda r: r[0])),
    st.tuples(st.just("data"), st.lists(record, min_size=1, max_size=10, unique_by=lambda r: r[0])),
    st.tuples(st.just("delete"), st.lists(st.tuples(st.integers(0, 12), st.one_of(st.none(), st.integers(0, 3))),
                                          min_size=1, max_size=4, unique_by=lambda r: r[0])),
    st.tuples(st.just("rollback"), st.integers(0, 6)))


def _rows(records: list[tuple], instant: str, rules: MergeRules) -> pa.Table:
    n = len(records)
    marker = rules.delete_marker or "D"
    unset_text = UNAVAILABLE if rules.partial is FILL else None
    return pa.Table.from_pydict({
        "_hoodie_commit_time": [instant] * n, "_hoodie_commit_seqno": [f"{instant}_{i}" for i in range(n)],
        "_hoodie_record_key": [f"k{r[0]:03d}" for r in records], "_hoodie_partition_path": [""] * n,
        "_hoodie_file_name": ["f"] * n, "id": [f"k{r[0]:03d}" for r in records],
        "ts": [r[1] for r in records], "seq": [r[2] for r in records],
        "op": [marker if r[3] == "marker" else "U" for r in records],
        "_hoodie_is_deleted": [True if r[3] == "flag" else (False if r[0] % 2 else None) for r in records],
        "v": [unset_text if r[4] & 1 else f"{instant}-{r[0]}-{PAD}" for r in records],
        "w": [None if r[4] & 2 else int(instant[-4:]) * 100 + r[0] for r in records]}, schema=ARROW)


def _delete_ordering(rules: MergeRules) -> Any:
    return {"ts": "long", "seq": "int"}[rules.ordering[0]] if len(rules.ordering) == 1 else "int"


def _write_slice(root: Path, base_keys: list[int] | None, blocks: list, rules: MergeRules) -> tuple[str | None, list]:
    base = None
    if base_keys is not None:
        base = "base.parquet"
        pq.write_table(_rows([(k, k % 4, k % 3, "", k % 4) for k in base_keys], "20240101000000000", rules),
                       root / base, row_group_size=5)
    logs = write_log_files(root, blocks, lambda arg, instant: _rows(arg, instant, rules),
                           lambda arg: [(f"k{k:03d}", "", o) for k, o in arg], DATA_SCHEMA, _delete_ordering(rules))
    return base, logs


# --- the model: Hudi's Java, one record at a time ------------------------------------------------------------------

DEFAULT = ("Integer", 0)  # OrderingValues.DEFAULT_VALUE
TYPES = {"ts": "Long", "seq": "Integer"}


@dataclass
class _Rec:
    ordering: tuple  # (Java class, value)
    delete: bool
    row: dict | None  # None: a delete block's delete (an empty payload)

    @property
    def commit_time_delete(self) -> bool:  # BufferedRecord.isCommitTimeOrderingDelete
        return self.delete and self.ordering == DEFAULT


def _java_ordering(row: dict, rules: MergeRules) -> tuple:
    if not rules.ordering:
        return DEFAULT
    values = [(TYPES[f], row[f]) for f in rules.ordering]
    return values[0] if len(values) == 1 else ("ArrayComparable", tuple(v for _, v in values))


def _compare(a: tuple, b: tuple) -> int:
    assert a[0] == b[0], f"Java would fail comparing {a} with {b}"
    return (a[1] > b[1]) - (a[1] < b[1])


def _keep_newer(old: _Rec, new: _Rec) -> bool:  # shouldKeepNewerRecord
    if new.commit_time_delete or old.commit_time_delete:
        return True
    return _compare(new.ordering, old.ordering) >= 0


def _unset(name: str, value: Any, rules: MergeRules) -> bool:
    if rules.partial is FILL:  # reconcileMarkerValues: text fields holding the unavailable value
        return isinstance(value, str) and value == UNAVAILABLE
    return value is None  # reconcileDefaultValues: every default here is null


def _coalesce(first: dict, second: dict, rules: MergeRules, fields: Any = None) -> dict:
    return {f: second[f] if _unset(f, v, rules) and (fields is None or f in fields) else v for f, v in first.items()}


def _partial_merge(high: _Rec, low: _Rec | None, rules: MergeRules) -> _Rec:  # PartialUpdateHandler.partialMerge
    if low is None or high.delete or low.delete:
        return high
    assert high.row is not None and low.row is not None
    return _Rec(high.ordering, False, _coalesce(high.row, low.row, rules))


def _delete_wins(old: _Rec, delete: _Rec) -> bool:  # deltaMergeDeleteRecord
    if old.commit_time_delete:
        return False
    return not (delete.ordering != DEFAULT and old.ordering[0] == delete.ordering[0]
                and _compare(old.ordering, delete.ordering) > 0)


def _fold_log(blocks: list, rules: MergeRules) -> dict[str, _Rec]:
    rolled_back = {f"2024010200000{arg:04d}" for kind, arg in blocks if kind == "rollback"}
    buffer: dict[str, _Rec] = {}
    event_time = bool(rules.ordering)
    legacy = rules.legacy_partial
    for i, (kind, arg) in enumerate(blocks):
        if kind == "rollback" or f"2024010200000{i:04d}" in rolled_back:
            continue
        if kind == "delete":
            for k, o in arg:
                key = f"k{k:03d}"
                java = DEFAULT if o is None or (o == 0 and _delete_ordering(rules) == "int") else (
                    "Long" if _delete_ordering(rules) == "long" else "Integer", o)
                delete, old = _Rec(java, True, None), buffer.get(key)
                if old is None or not event_time or _delete_wins(old, delete):
                    buffer[key] = delete
            continue
        for row in _rows(arg, f"2024010200000{i:04d}", rules).to_pylist():
            key = row["_hoodie_record_key"]
            deleted = bool(row["_hoodie_is_deleted"]) or (rules.delete_field is not None
                                                          and row[rules.delete_field] == rules.delete_marker)
            new, old = _Rec(_java_ordering(row, rules), deleted, row), buffer.get(key)
            if old is None:
                buffer[key] = new
            elif legacy is LegacyPartial.OVERWRITE_NON_DEFAULTS:  # OverwriteWithLatestAvroPayload.preCombine
                if not event_time or _keep_newer(old, new):
                    buffer[key] = new
            elif legacy is LegacyPartial.PARTIAL_UPDATE:  # PartialUpdateAvroPayload.preCombine
                assert not deleted
                if old.row is None:
                    buffer[key] = new
                elif _compare(old.ordering, new.ordering) > 0:  # mergeDisorderRecordsWithMetadata
                    data = _coalesce(old.row, new.row, rules)
                    meta = _coalesce(new.row, old.row, rules)
                    buffer[key] = _Rec(old.ordering, False, {f: meta[f] if f in META else data[f] for f in data})
                else:
                    buffer[key] = _Rec(new.ordering, False, _coalesce(new.row, old.row, rules))
            elif not event_time:  # CommitTimePartialRecordMerger.deltaMerge
                buffer[key] = _partial_merge(new, old, rules)
            elif _keep_newer(old, new):  # EventTimePartialRecordMerger.deltaMerge
                buffer[key] = _partial_merge(new, old, rules)
            else:
                buffer[key] = _partial_merge(old, new, rules)
    return buffer


def _final(base: _Rec, log: _Rec, rules: MergeRules) -> _Rec:
    legacy = rules.legacy_partial
    if legacy is LegacyPartial.OVERWRITE_NON_DEFAULTS:  # combineAndGetUpdateValue: the log's record first
        if log.delete:
            return log
        return _Rec(log.ordering, False, _coalesce(log.row, base.row, rules))
    if legacy is LegacyPartial.PARTIAL_UPDATE:  # combineAndGetUpdateValue(..., props): isRecordNewer
        if log.row is None:
            return log
        if _compare(base.ordering, log.ordering) > 0:
            data, meta = _coalesce(base.row, log.row, rules), _coalesce(log.row, base.row, rules)
            return _Rec(base.ordering, False, {f: meta[f] if f in META else data[f] for f in data})
        return _Rec(log.ordering, False, _coalesce(log.row, base.row, rules))
    if not rules.ordering:  # CommitTimePartialRecordMerger.finalMerge
        return _partial_merge(log, base, rules)
    if log.commit_time_delete:  # EventTimePartialRecordMerger.finalMerge
        return log
    if _compare(base.ordering, log.ordering) > 0:
        return _partial_merge(base, log, rules)
    return _partial_merge(log, base, rules)


def _model(base: list[dict], blocks: list, rules: MergeRules) -> list[dict]:
    buffer = _fold_log(blocks, rules)
    out = []
    for row in base:
        log = buffer.pop(row["_hoodie_record_key"], None)
        won = _final(_Rec(_java_ordering(row, rules), False, row), log, rules) if log is not None else None
        if won is None:
            out.append(row)
        elif not won.delete and won.row is not None:
            out.append(won.row)
    return out + [r.row for r in buffer.values() if r.row is not None and not r.delete]


def _sorted(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r[f] for f in ARROW.names if f != "_hoodie_file_name") for r in rows)


def _legal(blocks: list, rules: MergeRules) -> list:
    """The blocks Hudi's Java folds as the model does: delete blocks order deletes by one value at most; Hudi 0.15
    folds a delete carrying an ordering value unlike Hudi 1.1 (natural deletes only there); TMS refuses the data
    deletes of PartialUpdateAvroPayload tables (tested below)."""
    if len(rules.ordering) > 1 or rules.legacy_partial is not None:
        blocks = [(k, [(key, None) for key, _ in a]) if k == "delete" else (k, a) for k, a in blocks]
    if rules.legacy_partial is LegacyPartial.PARTIAL_UPDATE:
        blocks = [(k, [(*r[:3], "", r[4]) for r in a]) if k == "data" else (k, a) for k, a in blocks]
    return blocks


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base_keys=st.one_of(st.none(), st.lists(st.integers(0, 12), max_size=10, unique=True)),
       blocks=st.lists(block, min_size=1, max_size=7), rules_name=st.sampled_from(sorted(RULES)),
       budget=st.sampled_from([4_000, 64 * 1024 * 1024]))
def test_both_merges_give_the_rows_of_hudis_partial_merges(tmp_path_factory, base_keys, blocks, rules_name, budget):
    rules = RULES[rules_name]
    blocks = _legal(blocks, rules)
    root = tmp_path_factory.mktemp("slice")
    base, logs = _write_slice(root, base_keys, blocks, rules)
    base_table = pq.read_table(root / base) if base else None
    expected = _sorted(_model(base_table.to_pylist() if base_table is not None else [], blocks, rules))

    storage = LocalStorage(str(root))
    valid = lambda instant: True  # noqa: E731
    in_memory = merge_records(base_table, scan_logs(storage, logs, valid, ARROW, rules), rules, ARROW)
    assert _sorted(in_memory.to_pylist()) == expected
    out: list[pa.Table] = []
    BoundedMerge(storage, base, logs, valid, rules, ARROW, budget_bytes=budget).run(out.append)
    assert _sorted(pa.concat_tables(out).to_pylist() if out else []) == expected


def test_a_record_of_lower_ordering_value_fills_only_what_the_winner_leaves_unset(tmp_path):
    # ts 3 wins; ts 1, then ts 2 arrive later and fill its unset fields in write order (from ts 1, not ts 2)
    rules = RULES["1.1 event time, IGNORE_DEFAULTS (PartialUpdate)"]
    blocks = [("data", [(1, 3, 0, "", 3)]), ("data", [(1, 1, 0, "", 0)]), ("data", [(1, 2, 0, "", 0)])]
    base, logs = _write_slice(tmp_path, None, blocks, rules)
    storage = LocalStorage(str(tmp_path))
    (row,) = merge_records(None, scan_logs(storage, logs, lambda i: True, ARROW, rules), rules, ARROW).to_pylist()
    assert (row["ts"], row["_hoodie_commit_time"], row["v"][:17], row["w"]) == (
        3, "20240102000000000", "20240102000000001", 101)


V9 = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "9"}
V6 = {**V9, "hoodie.table.version": "6", "hoodie.table.precombine.field": "ts"}
MODEL = "org.apache.hudi.common.model."
MERGE_PROPERTY = "hoodie.record.merge.property."


@pytest.mark.parametrize("props,rules", [
    ({**V9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts",
      "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS", "hoodie.legacy.payload.class":
      MODEL + "PartialUpdateAvroPayload"}, MergeRules(("ts",), partial=IGNORE)),
    ({**V9, "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING", "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS",
      "hoodie.legacy.payload.class": MODEL + "OverwriteNonDefaultsWithLatestAvroPayload"},
     MergeRules(partial=IGNORE)),
    ({**V9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "_event_lsn",
      "hoodie.table.partial.update.mode": "FILL_UNAVAILABLE",
      "hoodie.legacy.payload.class": MODEL + "debezium.PostgresDebeziumAvroPayload",
      MERGE_PROPERTY + "hoodie.write.partial.update.unavailable.value": UNAVAILABLE,
      MERGE_PROPERTY + "hoodie.payload.delete.field": "_change_operation_type",
      MERGE_PROPERTY + "hoodie.payload.delete.marker": "d"},
     MergeRules(("_event_lsn",), "_change_operation_type", "d", partial=FILL, unavailable_value=UNAVAILABLE)),
    ({**V6, "hoodie.compaction.payload.class": MODEL + "PartialUpdateAvroPayload"},
     MergeRules(("ts",), partial=IGNORE, legacy_partial=LegacyPartial.PARTIAL_UPDATE, partial_blocks=False)),
    ({**V6, "hoodie.compaction.payload.class": MODEL + "OverwriteNonDefaultsWithLatestAvroPayload"},
     MergeRules(("ts",), base_loses=True, partial=IGNORE, legacy_partial=LegacyPartial.OVERWRITE_NON_DEFAULTS,
                partial_blocks=False)),
])
def test_the_rules_of_partial_merges_come_from_the_table_config(props, rules):
    assert merge_rules(TableConfig(props)) == rules


@pytest.mark.parametrize("props,words", [
    ({**V9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.partial.update.mode": "KEEP_VALUES"},
     "does not know"),
    ({**V9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.partial.update.mode":
      "FILL_UNAVAILABLE"}, "without hoodie.record.merge.property.hoodie.write.partial.update.unavailable.value"),
    ({**V9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
      "hoodie.legacy.payload.class": MODEL + "PartialUpdateAvroPayload"}, "sets no hoodie.table.partial.update.mode"),
    ({**V6, "hoodie.table.version": "8", "hoodie.compaction.payload.class":
      MODEL + "OverwriteNonDefaultsWithLatestAvroPayload"}, "on versions 6 and 9"),
    ({**V6, "hoodie.compaction.payload.class": MODEL + "debezium.PostgresDebeziumAvroPayload"}, "on version 9 only"),
    ({**{k: v for k, v in V6.items() if k != "hoodie.table.precombine.field"},
      "hoodie.compaction.payload.class": MODEL + "PartialUpdateAvroPayload"}, "without a precombine field"),
])
def test_partial_merges_tms_cannot_do_exactly_are_refused_in_one_line(props, words):
    with pytest.raises(UnsupportedTableError, match=words) as raised:
        merge_rules(TableConfig(props))
    assert "\n" not in str(raised.value)


def test_a_delete_in_the_log_of_a_v6_partial_update_table_is_refused(tmp_path):
    rules = RULES["0.15 PartialUpdate"]
    base, logs = _write_slice(tmp_path, [1], [("data", [(1, 2, 0, "flag", 0)])], rules)
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(UnsupportedTableError, match="deletes by _hoodie_is_deleted"):
        merge_records(pq.read_table(tmp_path / base), scan_logs(storage, logs, lambda i: True, ARROW, rules), rules,
                      ARROW)
    with pytest.raises(UnsupportedTableError, match="deletes by _hoodie_is_deleted"):
        BoundedMerge(storage, base, logs, lambda i: True, rules, ARROW).run(lambda rows: None)


def test_a_field_defaulting_to_a_value_is_refused_under_ignore_defaults(tmp_path):
    rules = RULES["1.1 event time, IGNORE_DEFAULTS (PartialUpdate)"]
    schema = {**DATA_SCHEMA, "fields": [*DATA_SCHEMA["fields"][:-1], {"name": "w", "type": "long", "default": 7}]}
    rows = _rows([(1, 2, 0, "", 0)], "20240102000000001", rules)
    (tmp_path / "log.1").write_bytes(avro_data_block(rows, schema, "20240102000000001"))
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(UnsupportedTableError, match="gives field w the default 7"):
        scan_logs(storage, ["log.1"], lambda i: True, ARROW, rules)
    with pytest.raises(UnsupportedTableError, match="gives field w the default 7"):
        BoundedMerge(storage, None, ["log.1"], lambda i: True, rules, ARROW).run(lambda rows: None)


def test_tms_writer_refuses_a_table_of_partial_merges_before_writing(tmp_path):
    path = tmp_path / "t"
    records = [{"id": 1, "ts": 1, "name": "a"}]
    create_table_for_records(str(path), records, table_type="MERGE_ON_READ", version=9, key=["id"], ordering=["ts"],
                             partition=[]).write(records, "upsert")
    props = path / ".hoodie" / "hoodie.properties"
    config = HudiTable.load(str(path)).config.props
    props.write_text(format_properties({**config, "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS"}))
    before = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())
    with pytest.raises(UnsupportedTableError, match="TMS's writer does not write to it"):
        HudiWriter(HudiTable.load(str(path))).write([{"id": 1, "ts": 2, "name": None}], "upsert")
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == before
