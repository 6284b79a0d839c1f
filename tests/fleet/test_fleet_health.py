"""The health score: a table with nothing to say scores 100; each problem (log backlog per file group, the
age of the oldest uncompacted delta commit against the objective or a time trigger, small files, size skew,
failed and held plans, clean lag, orphans) takes its penalty off with its reason; a count trigger waiting
for commits is no problem. And the digest read from a real table: its file groups, deltas and orphans."""
from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from tms.fleet.health import health_digest
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.serde import MetadataFormatError
from tms.planning.health import FileGroupFacts, HealthDigest, table_health
from tms.planning.policy import TablePolicy

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
MB = 2**20


def _digest(**changes) -> HealthDigest:
    base = {"is_mor": True, "file_groups": [FileGroupFacts("p", f"f{i}", 200 * MB, 1, MB) for i in range(4)],
            "oldest_uncompacted": NOW - timedelta(minutes=5), "writes_since_clean": 3, "clean_commits": 5,
            "failed_plans": 0, "held_plans": 0}
    return HealthDigest(**{**base, **changes})


def _kinds(digest: HealthDigest, policy: TablePolicy | None = None) -> list[str]:
    return [r.kind for r in table_health(digest, policy or TablePolicy(), NOW).reasons]


def test_a_table_with_nothing_to_say_scores_100():
    health = table_health(_digest(), TablePolicy(), NOW)
    assert (health.score, health.status, health.reasons) == (100, "ok", [])


def test_each_problem_takes_its_penalty_off_with_its_reason():
    backlog = _digest(file_groups=[FileGroupFacts("p", "big", 100 * MB, 12, 200 * MB)])
    health = table_health(backlog, TablePolicy(), NOW)
    assert [r.kind for r in health.reasons] == ["log_backlog", "log_backlog"] and health.score == 70
    assert "p/big has 12 log files" in health.reasons[0].message and "200.0 MB of logs" in health.reasons[1].message
    assert _kinds(backlog, TablePolicy.from_stored(
        {"hoodie.compact.inline.max.delta.commits": 10, "hoodie.parquet.max.file.size": 300 * MB})) == []

    small = _digest(file_groups=[FileGroupFacts("p", f"f{i}", MB, 0, 0) for i in range(10)])
    assert _kinds(small) == ["small_files"]
    skew = _digest(file_groups=[FileGroupFacts("p", f"f{i}", 400 * MB, 0, 0) for i in range(9)]
                   + [FileGroupFacts("p", "huge", 8000 * MB, 0, 0)])
    assert _kinds(skew) == ["size_skew"]
    assert _kinds(_digest(failed_plans=2, held_plans=1)) == ["failed_plans", "held_plans"]
    assert table_health(_digest(failed_plans=2, held_plans=1), TablePolicy(), NOW).score == 70
    assert _kinds(_digest(writes_since_clean=16)) == ["clean_lag"]
    assert _kinds(_digest(orphan_files=2, orphan_bytes=3 * MB)) == ["orphan_files"]
    everything = _digest(file_groups=[FileGroupFacts("p", "big", 100 * MB, 12, 200 * MB)], failed_plans=5,
                         held_plans=1, writes_since_clean=99, orphan_files=1)
    assert table_health(everything, TablePolicy(), NOW).score == 10


def test_the_oldest_uncompacted_delta_commit_counts_against_the_objective_or_a_time_trigger():
    old = _digest(oldest_uncompacted=NOW - timedelta(hours=5))
    assert _kinds(old) == [], "a count trigger waiting for commits is the policy working"
    time_trigger = TablePolicy.from_stored({"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED"})
    assert _kinds(old, time_trigger) == ["uncompacted_age"]
    objective = TablePolicy.from_stored({"tms.freshness.max.uncompacted.seconds": 1800})
    assert table_health(_digest(oldest_uncompacted=NOW - timedelta(minutes=20)), objective, NOW).score == 90
    missed = table_health(_digest(oldest_uncompacted=NOW - timedelta(minutes=31)), objective, NOW)
    assert missed.score == 70 and "freshness objective (1800 s) is missed" in missed.reasons[0].message
    assert _kinds(_digest(oldest_uncompacted=NOW - timedelta(minutes=10)), objective) == []
    assert _kinds(_digest(is_mor=False, oldest_uncompacted=None), objective) == []


ROWS = [{"id": i, "ts": i, "city": "sf" if i % 2 else "la"} for i in range(6)]


def test_the_digest_of_a_table_on_storage(tmp_path):
    writer = create_table_for_records(str(tmp_path / "t"), ROWS, table_type="MERGE_ON_READ", version=8, key=["id"],
                                      ordering=["ts"], partition=["city"])
    writer.write(ROWS, "insert")
    writer.write(ROWS[:2], "upsert")
    table = HudiTable.load(str(tmp_path / "t"))
    [first] = [i.timestamp for i in table.timeline.instants()][:1]
    # A failed write's leftover (an instant the timeline does not have, after its first one), an hour old.
    leftover = tmp_path / "t" / "city=sf" / f"{'a' * 36}-0_0-1-1_{int(first) + 1000}.parquet"
    leftover.write_bytes(b"x" * 100)
    os.utime(leftover, (time.time() - 3600, time.time() - 3600))
    now = datetime.now(UTC)
    digest = health_digest(table, now, tasks_by_state={"FAILED": 1}, clean_commits=5, orphan_safety_seconds=600)
    assert digest.is_mor and len(digest.file_groups) == 2
    assert [g.log_count for g in digest.file_groups] == [1, 1], "the upsert's log file in each partition"
    assert digest.oldest_uncompacted is not None and digest.writes_since_clean == 2
    assert (digest.orphan_files, digest.orphan_bytes, digest.failed_plans) == (1, 100, 1)
    younger = health_digest(table, now, tasks_by_state={}, clean_commits=5, orphan_safety_seconds=7200)
    assert younger.orphan_files == 0, "younger than the safety window: maybe a write under way"


def test_a_truncated_latest_commit_makes_the_table_unreadable_naming_the_file(tmp_path):
    # The fleet round scores a table whose digest cannot be made 0 ("unreadable", with this message).
    writer = create_table_for_records(str(tmp_path / "t"), ROWS, table_type="COPY_ON_WRITE", version=6, key=["id"],
                                      ordering=["ts"], partition=["city"])
    writer.write(ROWS, "insert")
    table = HudiTable.load(str(tmp_path / "t"))
    latest = table.timeline.last_of(("commit",), completed=True)
    path = table.timeline.path_of(latest)
    for damaged in (b"", b'{"partitionToWriteStats": {"city=sf": [{"fileId": "'):  # emptied, cut short
        (tmp_path / "t" / ".hoodie" / os.path.basename(path)).write_bytes(damaged)
        with pytest.raises(MetadataFormatError, match=re.escape(os.path.basename(path))):
            health_digest(HudiTable.load(str(tmp_path / "t")), datetime.now(UTC), tasks_by_state={}, clean_commits=5,
                          orphan_safety_seconds=600)
