"""The service's table health uses the planner's failed-write rule (heartbeat interval x tolerable misses,
as Hudi decides), not a rule of its own."""
import os
import time
from datetime import UTC, datetime

from planning_support import ModelledTable, policy, rec

from service.table_view import live_view
from service.ui.table_facts import read_table_facts
from tms.db import TableRecord
from tms.fleet import file_group_sample
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import TableType
from tms.hudi.table.writer import create_table_for_records


def test_table_health_reports_the_writes_the_planner_would_roll_back(tmp_path):
    t = ModelledTable(tmp_path / "t")
    t.write([rec(i, 10) for i in range(3)], "insert")
    pending = t.write([rec(0, 20)], leave_inflight=True)
    rule = policy(**{"hoodie.client.heartbeat.interval_in_ms": 60_000, "hoodie.client.heartbeat.tolerable.misses": 2})

    health = live_view(str(t.path), rule, {}, True)["health"]
    assert health.status == "ok" and health.reasons == [], "a live writer (fresh heartbeat) is not failed"

    beat = t.path / ".hoodie" / ".heartbeat" / pending
    old = time.time() - 121  # silent for longer than 60 s x 2 misses
    os.utime(beat, (old, old))
    health = live_view(str(t.path), rule, {}, True)["health"]
    assert health.status == "warning"
    [reason] = health.reasons
    assert pending in reason and "presumed failed" in reason and "tolerance 120 s" in reason


def test_a_table_whose_damaged_alert_fires_scores_lower(tmp_path):
    """The files the table's `table_damaged` alert names take its score down, with the reason."""
    t = ModelledTable(tmp_path / "t")
    t.write([rec(i, 10) for i in range(3)], "insert")
    healthy = live_view(str(t.path), policy(), {}, True)["health"]
    damaged = live_view(str(t.path), policy(), {}, True, damaged_files=["city=sf/f1-0_0-1-0_1.parquet"])["health"]
    assert damaged.status == "warning" and damaged.score == healthy.score - 60
    assert any("city=sf/f1-0_0-1-0_1.parquet" in r and "table_damaged" in r for r in damaged.reasons)


def _table_of_partitions(path, partitions: int) -> str:
    """A MERGE_ON_READ table of `partitions` partitions (city=p00 ...), one file group each."""
    rows = [{"id": n, "ts": 1, "city": f"p{n:02d}"} for n in range(partitions)]
    writer = create_table_for_records(str(path), rows[:1], table_type="MERGE_ON_READ", version=8, key=["id"],
                                      ordering=["ts"], partition=["city"])
    writer.write(rows, "insert")
    return str(path)


def _partition_listings(monkeypatch) -> list[str]:
    """The partition folders listed from now on (LocalStorage.listdir or .names of a `city=` folder)."""
    listed: list[str] = []
    for name in ("listdir", "names"):
        def counted(self, rel, _listing=getattr(LocalStorage, name)):
            if rel.startswith("city="):
                listed.append(rel)
            return _listing(self, rel)
        monkeypatch.setattr(LocalStorage, name, counted)
    return listed


def test_a_giant_tables_view_and_page_read_a_bounded_sample_of_its_partitions(tmp_path, monkeypatch):
    """Issue 37, item 5: the table page and GET /api/v1/tables/{id} answer a table of many partitions with
    aggregates estimated from an evenly spaced sample, never listing every partition."""
    base = _table_of_partitions(tmp_path / "t", 24)
    monkeypatch.setattr(file_group_sample, "VIEW_LISTINGS", 8)  # as if the table had thousands of partitions
    listed = _partition_listings(monkeypatch)
    table = HudiTable.load(base)
    view = live_view(base, policy(), {}, True, table=table)
    stats = view["file_group_stats"]
    assert stats.sampled and 0 < stats.partitions_read < 8
    assert (stats.partitions, stats.file_groups) == (24, 24), "evenly spaced: the estimates of a uniform table"
    assert len(stats.largest) == stats.partitions_read, "the largest of the partitions read"
    assert view["health"].score is not None
    now = datetime.now(UTC)
    row = TableRecord(id=0, base_path=base, name="t", database="lake", table_type=TableType.MERGE_ON_READ,
                      table_version=8, created_at=now, updated_at=now)
    facts = read_table_facts(row, [], with_timeline=True, table=table)
    assert facts.error is None and facts.sampled_partitions == stats.partitions_read
    assert len(facts.file_group_bytes) == stats.partitions_read
    assert len(set(listed)) == stats.partitions_read and len(listed) <= 2 * stats.partitions_read, \
        f"the sampled partitions listed, each at most twice (names, then files): {listed}"


def test_a_table_of_fewer_partitions_than_the_view_reads_is_shown_exactly(tmp_path):
    base = _table_of_partitions(tmp_path / "t", 24)
    stats = live_view(base, policy(), {}, True)["file_group_stats"]
    assert not stats.sampled and (stats.partitions, stats.partitions_read, stats.file_groups) == (24, 24, 24)
    assert all(g.num_records == 1 for g in stats.largest)
