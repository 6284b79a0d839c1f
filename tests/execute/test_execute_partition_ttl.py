"""Partition TTL (Hudi's KEEP_BY_TIME): the expired partitions, a bounded number per run, are deleted by one
`delete_partition` replacecommit; hudi-rs no longer reads their rows, the metadata table no longer lists them
(nor their keys in the record index), and a later clean deletes their files. Days are injected, not waited."""
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mdt_model import check_metadata_table
from support import hudi_rs_table, rows

from tms.execute.dispatch import execute_instant
from tms.execute.partition_delete import delete_partitions
from tms.execute.runner import LocalRunner
from tms.hudi.errors import HudiError
from tms.hudi.metadata.init import create_metadata_table
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.instant import Action, instant_to_datetime
from tms.hudi.timeline.serde import DELETE_PARTITION
from tms.planning.clean import plan_clean
from tms.planning.policy import TablePolicy
from tms.planning.ttl import expired_partitions

DAY_MS = 86_400_000
JAN_10 = int(datetime(2024, 1, 10, tzinfo=UTC).timestamp() * 1000)


def _event(i: int, day: int) -> dict:
    return {"id": i, "name": f"n{i}", "seq": 1, "ts": JAN_10 + day * DAY_MS}


def _policy(days: int, most: int = 1000) -> TablePolicy:
    return TablePolicy.from_stored({"hoodie.partition.ttl.strategy.type": "KEEP_BY_TIME",
                                    "hoodie.partition.ttl.days.retain": days,
                                    "hoodie.partition.ttl.management.max.partitions.to.delete": most})


def _ids(path) -> list[int]:
    return sorted(r["id"] for r in rows(hudi_rs_table(path)))


@pytest.mark.parametrize(("table_type", "version"), [("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 8),
                                                     ("MERGE_ON_READ", 6)])
def test_expired_day_partitions_are_deleted_and_gone_from_reads_mdt_and_storage(tmp_path, table_type, version):
    path = tmp_path / "t"
    # Partitioned by day of `ts` (the time-based key generator): a partition's time is its value.
    writer = create_table_for_records(str(path), [_event(0, 0)], table_type=table_type, version=version, key=["id"],
                                      ordering=["seq"], partition=["ts"], partition_time_format="yyyy-MM-dd")
    create_metadata_table(writer.table, ["files", "column_stats", "record_index"])
    writer.write([_event(i, i % 4) for i in range(12)])  # days 10..13, three records each
    table = HudiTable.load(str(path))
    assert sorted(table.file_system_view().partitions) == [f"ts=2024-01-{d}" for d in (10, 11, 12, 13)]

    # The injected clock; a partition stands for its day's start: 2 days retained keep the 12th and 13th.
    now = datetime(2024, 1, 14, tzinfo=UTC)
    assert expired_partitions(table, _policy(2), now) == ["ts=2024-01-10", "ts=2024-01-11"]
    assert expired_partitions(table, _policy(2, most=1), now) == ["ts=2024-01-10"]  # bounded, oldest first
    assert expired_partitions(table, TablePolicy(), now) == []  # days.retain -1: off

    instant = delete_partitions(table, expired_partitions(table, _policy(2), now))
    table = HudiTable.load(str(path))
    done = table.timeline.get(instant)
    assert done.action == Action.REPLACE_COMMIT and done.is_completed
    meta = table.timeline.commit_metadata(done)
    assert meta.operation_type == DELETE_PARTITION
    assert sorted(meta.partition_to_replace_file_ids) == ["ts=2024-01-10", "ts=2024-01-11"]
    assert _ids(path) == [i for i in range(12) if i % 4 in (2, 3)]
    mdt = MetadataTable(table)
    assert mdt.all_partitions() == ["ts=2024-01-12", "ts=2024-01-13"]
    assert sorted(mdt.file_listing()) == ["ts=2024-01-12", "ts=2024-01-13"]
    assert sorted(int(k) for k in mdt.records("record_index")) == [i for i in range(12) if i % 4 in (2, 3)]
    assert expired_partitions(table, _policy(2), now) == []  # deleted once

    writer.table.timeline.reload()
    writer.write([_event(20, 3)])  # writers go on
    assert _ids(path) == sorted([i for i in range(12) if i % 4 in (2, 3)] + [20])

    # A later clean (once the replacecommit left the retained commits) deletes the replaced files; the MDT then
    # lists exactly what storage holds.
    cleaned = plan_clean(HudiTable.load(str(path)), TablePolicy.from_stored({"hoodie.cleaner.commits.retained": 1}),
                         datetime.now(UTC))
    assert cleaned is not None
    execute_instant(HudiTable.load(str(path)), cleaned.instant, LocalRunner(1))
    for day in (10, 11):
        assert not [f for f in (Path(path) / f"ts=2024-01-{day}").glob("*") if not f.name.startswith(".")]
    check_metadata_table(Path(path))


def test_partitions_not_partitioned_by_time_expire_by_their_last_write(tmp_path):
    path = tmp_path / "t"
    writer = create_table_for_records(str(path), [{"id": 0, "seq": 1, "city": "a"}], table_type="MERGE_ON_READ",
                                      version=6, key=["id"], ordering=["seq"], partition=["city"])
    first = writer.write([{"id": 1, "seq": 1, "city": "a"}, {"id": 2, "seq": 1, "city": "b"}]).instant
    last = writer.write([{"id": 2, "seq": 2, "city": "b"}]).instant  # an update: a log append to b's slice
    table = HudiTable.load(str(path))
    assert {(s.partition, s.base_instant) for s in table.file_system_view().latest_slices()} == {
        ("city=a", first), ("city=b", first)}
    zone = table.config.timeline_zone
    a_written, b_written = instant_to_datetime(first, zone), instant_to_datetime(last, zone)
    assert b_written > a_written
    between = a_written + (b_written - a_written) / 2
    # b's last write is the append, though its file slice's base instant is the first write's (Hudi's rule alone
    # would expire b with a).
    assert expired_partitions(table, _policy(1), between + timedelta(days=1)) == ["city=a"]
    assert expired_partitions(table, _policy(1), a_written + timedelta(days=1)) == []
    assert expired_partitions(table, _policy(1), b_written + timedelta(days=1, milliseconds=1)) == ["city=a", "city=b"]


def test_a_partition_with_a_pending_write_is_not_deleted(tmp_path):
    path = tmp_path / "t"
    writer = create_table_for_records(str(path), [{"id": 0, "seq": 1, "city": "a"}], table_type="COPY_ON_WRITE",
                                      version=8, key=["id"], ordering=["seq"], partition=["city"])
    writer.write([{"id": 1, "seq": 1, "city": "a"}])
    writer.write([{"id": 2, "seq": 1, "city": "a"}], leave_inflight=True)
    table = HudiTable.load(str(path))
    with pytest.raises(HudiError, match="pending write"):
        delete_partitions(table, ["city=a"])
    assert [i.action for i in table.timeline.pending()] == ["commit"]  # nothing written
    assert _ids(path) == [1]


def test_tms_ttl_applies_a_tables_ttl_now(tmp_path):
    from typer.testing import CliRunner

    from tms.cli import app
    path = tmp_path / "t"
    writer = create_table_for_records(str(path), [_event(0, 0)], table_type="MERGE_ON_READ", version=8, key=["id"],
                                      ordering=["seq"], partition=["ts"], partition_time_format="yyyy-MM-dd")
    writer.write([_event(i, i % 2) for i in range(6)])  # Jan 10 and 11, long past
    policy = ["--policy", "hoodie.partition.ttl.days.retain=1",
              "--policy", "hoodie.partition.ttl.management.max.partitions.to.delete=1"]
    tms = CliRunner()
    dry = tms.invoke(app, ["ttl", str(path), *policy, "--dry-run"])
    assert (dry.exit_code, dry.output) == (0, "expired partitions: ts=2024-01-10\n")
    assert _ids(path) == list(range(6))  # nothing written
    done = tms.invoke(app, ["ttl", str(path), *policy])
    assert done.exit_code == 0 and done.output.startswith("deleted 1 partition(s) (ts=2024-01-10) in replacecommit")
    assert _ids(path) == [1, 3, 5]
    refused = tms.invoke(app, ["ttl", str(path), "--policy", "tms.ttl.field=nope", "--policy", "tms.ttl.days=1"])
    assert refused.exit_code != 0 and "tms.ttl.field 'nope' is not a field" in refused.output
