"""The service's table health uses the planner's failed-write rule (heartbeat interval x tolerable misses,
as Hudi decides), not a rule of its own."""
import os
import time

from planning_support import ModelledTable, policy, rec

from service.table_view import live_view


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
