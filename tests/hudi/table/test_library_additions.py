"""Library pieces the executors need: reverting a failed plan to requested, exclusive streamed creates,
merging into a given output schema, and the merge's ordering field."""
import pyarrow as pa
import pytest

from tms.hudi.errors import InstantConflictError, UnsupportedTableError
from tms.hudi.records.merge import LogScan, merge_records
from tms.hudi.records.merge_rules import MergeRules, merge_rules
from tms.hudi.storage.table_storage import open_storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import TableConfig
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.instant import Action, State


def _table(tmp_path, version=8) -> HudiTable:
    create_table_for_records(str(tmp_path / "t"), [{"id": 1, "ts": 1}], table_type="MERGE_ON_READ",
                             version=version, key=["id"], ordering=["ts"], partition=[])
    return HudiTable.load(str(tmp_path / "t"))


@pytest.mark.parametrize("version", [6, 8])
def test_revert_to_requested_keeps_the_plan(tmp_path, version):
    tl = _table(tmp_path, version).timeline
    requested = tl.create_requested(Action.COMPACTION, b"plan")
    tl.transition_to_inflight(requested)
    tl.revert_to_requested(requested.timestamp)
    assert set(tl.states_of(requested.timestamp)) == {State.REQUESTED}
    assert tl.read_plan(requested.timestamp) == b"plan"
    tl.revert_to_requested(requested.timestamp)  # nothing inflight: nothing to do
    assert set(HudiTable.load(str(tmp_path / "t")).timeline.states_of(requested.timestamp)) == {State.REQUESTED}


def test_revert_to_requested_refuses_completed_and_unknown(tmp_path):
    tl = _table(tmp_path).timeline
    done = tl.create_requested(Action.DELTA_COMMIT)
    tl.complete(tl.transition_to_inflight(done), b"")
    with pytest.raises(InstantConflictError, match="completed"):
        tl.revert_to_requested(done.timestamp)
    with pytest.raises(InstantConflictError, match="no requested plan"):
        tl.revert_to_requested("20200101000000000")


def test_open_new_never_overwrites(tmp_path):
    storage = open_storage(str(tmp_path))
    with storage.open_new("p/f.parquet") as fh:
        fh.write(b"first")
    with pytest.raises((FileExistsError, InstantConflictError)):
        storage.open_new("p/f.parquet")
    assert (tmp_path / "p" / "f.parquet").read_bytes() == b"first"


def test_merge_records_into_a_wider_schema():
    base = pa.table({"_hoodie_record_key": ["a", "b"], "ts": [1, 1], "v": ["a1", "b1"]})
    update = pa.table({"_hoodie_record_key": ["b", "c"], "ts": [2, 2], "v": ["b2", "c2"], "extra": [7, 8]})
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("ts", pa.int64()), ("v", pa.string()),
                        ("extra", pa.int64())])
    merged = merge_records(base, LogScan([update], [], [0]), MergeRules.of("ts"), schema)
    assert merged.schema.equals(schema)
    assert sorted(merged.to_pylist(), key=lambda r: r["_hoodie_record_key"]) == [
        {"_hoodie_record_key": "a", "ts": 1, "v": "a1", "extra": None},
        {"_hoodie_record_key": "b", "ts": 2, "v": "b2", "extra": 7},
        {"_hoodie_record_key": "c", "ts": 2, "v": "c2", "extra": 8}]
    assert merge_records(base, LogScan([], [], []), MergeRules.of("ts"), schema).schema.equals(schema)
    assert merge_records(None, LogScan([], [], []), MergeRules.of("ts"), schema).schema.equals(schema)


def test_merge_rules_order_by_the_ordering_fields_under_event_time_only():
    props = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "8",
             "hoodie.table.precombine.field": "ts"}
    assert merge_rules(TableConfig({**props, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})).ordering == ("ts",)
    assert merge_rules(TableConfig({**props, "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})).ordering == ()
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):
        merge_rules(TableConfig({**props, "hoodie.record.merge.mode": "CUSTOM"}))
