"""Record TTL (`tms.ttl.field`, `tms.ttl.days`): once the TTL has passed (the clock injected), compaction and
clustering drop expired records from the file groups they rewrite, and the TTL task deletes them as Hudi deletes;
hudi-rs reads no expired record, the unexpired rows are untouched, the record index forgets the expired keys, and
the TTL task's deletes are a commit an incremental reader sees."""
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from support import hudi_rs_table, rows

from tms.execute.dispatch import execute_instant
from tms.execute.record_ttl_delete import delete_expired_records
from tms.execute.runner import LocalRunner
from tms.hudi.errors import HudiError
from tms.hudi.log_format.log_file import BlockType, read_log_file
from tms.hudi.metadata.init import create_metadata_table
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.serde import TTL_CUTOFF_KEY
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction
from tms.planning.policy import TablePolicy
from tms.planning.ttl import record_ttl_cutoff
from tms.record_ttl import expired_mask, ttl_field_refusal

NOW = datetime(2024, 2, 1, tzinfo=UTC)  # the injected clock
TTL = TablePolicy.from_stored({"tms.ttl.field": "event_ms", "tms.ttl.days": 5})  # expired: before Jan 27
COLUMNS = ["id", "city", "seq", "event_ms"]


def _record(i: int, seq: int = 1) -> dict:
    day = 20 + i % 12  # Jan 20 .. Jan 31
    return {"id": i, "seq": seq, "city": "ab"[i % 2],
            "event_ms": int(datetime(2024, 1, day, tzinfo=UTC).timestamp() * 1000)}


def _expired(r: dict) -> bool:
    return r["event_ms"] < int(datetime(2024, 1, 27, tzinfo=UTC).timestamp() * 1000)


def _table(path, table_type: str):
    writer = create_table_for_records(str(path), [_record(0)], table_type=table_type, version=8, key=["id"],
                                      ordering=["seq"], partition=["city"])
    create_metadata_table(writer.table, ["files", "record_index"])
    writer.write([_record(i) for i in range(24)])
    return writer


def _read(path) -> list[dict]:
    return rows(hudi_rs_table(path), COLUMNS)


def _index_keys(path) -> list[int]:
    return sorted(int(k) for k in MetadataTable(HudiTable.load(str(path))).records("record_index"))


def test_the_ttl_field_must_hold_a_time():
    schema = pa.schema([("ts", pa.timestamp("us", "UTC")), ("d", pa.date32()), ("ms", pa.int64()),
                        ("s", pa.string()), ("f", pa.float64()), ("i", pa.int32())])
    assert [ttl_field_refusal(schema, f) for f in ("ts", "d", "ms", "s")] == [None] * 4
    assert "holds no time" in ttl_field_refusal(schema, "f")
    assert "holds no time" in ttl_field_refusal(schema, "i")
    assert "is not a field" in ttl_field_refusal(schema, "nope")
    with pytest.raises(ValueError, match="set together"):
        TablePolicy.from_stored({"tms.ttl.field": "ts"})


def test_each_kind_of_time_field_expires_before_the_cutoff_and_a_null_never():
    day = lambda d: datetime(2024, 1, d, tzinfo=UTC)  # noqa: E731
    millis = lambda d: int(day(d).timestamp() * 1000)  # noqa: E731
    records = pa.table({
        "utc": pa.array([day(9), day(11), None], pa.timestamp("ms", "UTC")),
        "local": pa.array([day(9).replace(tzinfo=None), day(11).replace(tzinfo=None), None], pa.timestamp("us")),
        "date": pa.array([day(9).date(), day(10).date(), None], pa.date32()),
        "epoch_ms": pa.array([millis(9), millis(11), None], pa.int64()),
        "text": pa.array(["2024-01-09", "2024-01-10T00:00:01", None]),
        "bad_text": pa.array(["yesterday", None, None])})
    for field in ("utc", "local", "date", "epoch_ms", "text"):
        assert expired_mask(records, field, day(10)).to_pylist() == [True, False, False], field
    with pytest.raises(HudiError, match="not an ISO date"):
        expired_mask(records, "bad_text", day(10))


def test_compaction_drops_expired_records_and_the_record_index_forgets_them(tmp_path, spark_runner):
    path = tmp_path / "t"
    writer = _table(path, "MERGE_ON_READ")
    writer.write([_record(i, seq=2) for i in range(0, 24, 3)])  # log files to compact
    before = _read(path)
    table = HudiTable.load(str(path))
    planned = plan_compaction(table, TTL, NOW, force=True)
    execute_instant(HudiTable.load(str(path)), planned.instant, spark_runner)  # as the Spark job runs it
    after = _read(path)
    assert after == [r for r in before if not _expired(r)]  # unexpired rows untouched, expired ones gone
    assert len(after) < len(before)
    assert _index_keys(path) == sorted(r["id"] for r in after)
    done = HudiTable.load(str(path)).timeline.completed(["commit"])[-1]
    assert TTL_CUTOFF_KEY in HudiTable.load(str(path)).timeline.commit_metadata(done).extra_metadata
    # A plan made before the TTL passed drops nothing.
    writer.table.timeline.reload()
    writer.write([_record(i, seq=3) for i in range(1, 24, 3)])
    early = plan_compaction(HudiTable.load(str(path)), TTL, NOW - timedelta(days=30), force=True)
    execute_instant(HudiTable.load(str(path)), early.instant, LocalRunner(1))
    assert len(_read(path)) == len(after) + len([i for i in range(1, 24, 3) if _expired(_record(i))])


def test_a_record_updated_after_the_compaction_plan_stays_in_the_record_index(tmp_path):
    path = tmp_path / "t"
    writer = create_table_for_records(str(path), [_record(0)], table_type="MERGE_ON_READ", version=6, key=["id"],
                                      ordering=["seq"], partition=["city"])
    create_metadata_table(writer.table, ["files", "record_index"])
    writer.write([_record(i) for i in range(12)])
    writer.write([_record(i, seq=2) for i in range(12)])
    planned = plan_compaction(HudiTable.load(str(path)), TTL, NOW, force=True)
    assert not planned.stats.within_budget, "a compaction that drops expired records merges in memory"
    revived = {**_record(0, seq=3), "event_ms": int(NOW.timestamp() * 1000)}  # expired in the plan, not any more
    writer.table.timeline.reload()
    writer.write([revived])  # into the slice the plan opened
    execute_instant(HudiTable.load(str(path)), planned.instant, LocalRunner(1))
    after = _read(path)
    assert revived["id"] in [r["id"] for r in after] and not [r for r in after if _expired(r)]
    assert _index_keys(path) == sorted(r["id"] for r in after)


def test_clustering_drops_expired_records(tmp_path):
    path = tmp_path / "t"
    _table(path, "COPY_ON_WRITE")
    before = _read(path)
    planned = plan_clustering(HudiTable.load(str(path)), TTL, NOW, force=True)
    assert planned is not None
    execute_instant(HudiTable.load(str(path)), planned.instant, LocalRunner(1))
    after = _read(path)
    assert after == [r for r in before if not _expired(r)] and len(after) < len(before)
    assert _index_keys(path) == sorted(r["id"] for r in after)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_ttl_task_deletes_expired_records_as_hudi_deletes(tmp_path, table_type):
    path = tmp_path / "t"
    _table(path, table_type)
    before = _read(path)
    table = HudiTable.load(str(path))
    last_write = table.timeline.completed()[-1].timestamp
    assert delete_expired_records(table, "event_ms", record_ttl_cutoff(TTL, NOW - timedelta(days=30))).instant is None

    done = delete_expired_records(table, "event_ms", record_ttl_cutoff(TTL, NOW))
    expired = [r for r in before if _expired(r)]
    assert (done.deleted, done.file_groups) == (len(expired), 2)  # one file group per city
    after = _read(path)
    assert after == [r for r in before if not _expired(r)]
    assert _index_keys(path) == sorted(r["id"] for r in after)
    # The removal is a Hudi delete commit after the last write, in the range an incremental reader from there
    # reads: on COPY_ON_WRITE its write stats count the deletes, on MERGE_ON_READ its log files hold delete
    # blocks of the expired keys; hudi-rs's incremental read from there reads none of them.
    table = HudiTable.load(str(path))
    commits = table.timeline.completed(after=last_write)
    assert [c.timestamp for c in commits] == [done.instant]
    meta = table.timeline.commit_metadata(commits[0])
    assert meta.operation_type == "DELETE"
    if table_type == "COPY_ON_WRITE":
        assert sum(s.num_deletes or 0 for s in meta.write_stats()) == len(expired)
    else:
        deleted = [int(k) for s in meta.write_stats() for b in read_log_file((path / s.path).read_bytes())
                   if b.block_type is BlockType.DELETE and b.instant_time == done.instant
                   for k, _p, _o in b.deleted_keys()]
        assert sorted(deleted) == sorted(r["id"] for r in expired)
    incremental = hudi_rs_table(path, start=last_write)
    assert incremental.num_rows and not [r for r in rows(incremental, COLUMNS) if _expired(r)]
    # Run again: nothing left to delete.
    assert delete_expired_records(table, "event_ms", record_ttl_cutoff(TTL, NOW)).instant is None


def test_the_ttl_task_is_bounded_and_refuses_a_field_without_time(tmp_path):
    path = tmp_path / "t"
    _table(path, "MERGE_ON_READ")
    table = HudiTable.load(str(path))
    first = delete_expired_records(table, "event_ms", record_ttl_cutoff(TTL, NOW), max_file_groups=1)
    assert first.file_groups == 1
    second = delete_expired_records(HudiTable.load(str(path)), "event_ms", record_ttl_cutoff(TTL, NOW))
    assert second.file_groups == 1 and first.deleted + second.deleted == len([r for r in range(24)
                                                                             if _expired(_record(r))])
    with pytest.raises(HudiError, match="not an ISO date"):  # refused before anything is written
        delete_expired_records(HudiTable.load(str(path)), "city", record_ttl_cutoff(TTL, NOW))
    assert HudiTable.load(str(path)).timeline.completed()[-1].timestamp == second.instant
