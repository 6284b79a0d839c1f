"""The fleet's health and orphan files: tables scored on request are listed worst first with their reasons and
shown in /metrics; a failed write's leftover older than the safety window is listed as an orphan (a younger
one is not), counted in the table's health, and removed only when an admin approves that file — the table's
rows read back the same."""
from __future__ import annotations

import os
import re
import shutil
import time
import uuid

import pytest

from tms.db import TaskRepo, TaskState
from tms.db.repos.tasks import FailureRecord
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "city": "sf" if i % 2 else "la"} for i in range(6)]
DAY = 24 * 3600


@pytest.fixture
def lake(settings):
    path = settings.storage_roots[0].rstrip("/") + f"/fleet-{uuid.uuid4().hex[:8]}"
    for name in ("clean_t", "leftover_t"):
        writer = create_table_for_records(f"{path}/{name}", ROWS, table_type="MERGE_ON_READ", version=8, key=["id"],
                                          ordering=["ts"], partition=["city"])
        writer.write(ROWS, "insert")
        writer.write(ROWS[:2], "upsert")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _leftover(base_path: str, name_suffix: int, age_seconds: float) -> str:
    """A failed write's leftover base file: its instant is after the timeline's first, and not on it."""
    first = min(i.timestamp for i in HudiTable.load(base_path).timeline.instants())
    rel = f"city=sf/{uuid.uuid4()}-0_0-9-9_{int(first) + name_suffix}.parquet"
    with open(f"{base_path}/{rel}", "wb") as fh:
        fh.write(b"not a parquet file" * 10)
    os.utime(f"{base_path}/{rel}", (time.time() - age_seconds, time.time() - age_seconds))
    return rel


def _register(client, tokens, base_path):
    response = client.post("/api/v1/tables", json={"base_path": base_path}, headers=tokens["admin"])
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_the_fleet_worst_first_and_orphans_removed_on_an_admins_approval(client, tokens, lake, app):
    clean_id = _register(client, tokens, f"{lake}/clean_t")
    left_path = f"{lake}/leftover_t"
    left_id = _register(client, tokens, left_path)
    old = _leftover(left_path, 1000, 2 * DAY)
    young = _leftover(left_path, 2000, 60)
    with app.state.database.transaction() as session:  # a plan failed for good on the same table
        TaskRepo(session).create(table_id=left_id, service="compaction", instant="20990101000000000",
                                 state=TaskState.FAILED)
        # and one whose attempt failed (a worker stopped mid-job) with its retry to come: no failure yet
        tasks = TaskRepo(session)
        retried, _ = tasks.create(table_id=clean_id, service="compaction", instant="20990101000000001",
                                  state=TaskState.RUNNABLE)
        claimed = tasks.claim(retried.id, expected_version=retried.version, owner="w", lease_seconds=60)
        assert claimed is not None
        tasks.finish(retried.id, fencing_token=claimed.fencing_token, succeeded=False, error="worker stopped",
                     failure=FailureRecord("stopped", True, "stopped: attempt 1 of 3 in 300 s", 300.0))

    # Registered, not scored yet: listed at once, first.
    unscored = client.get("/api/v1/fleet/health", headers=tokens["viewer"]).json()
    assert unscored["by_status"] == {"unscored": 2}
    assert [(i["table_id"], i["status"], i["score"], i["reasons"], i["checked_at"]) for i in unscored["items"]] == [
        (clean_id, "unscored", None, [], None), (left_id, "unscored", None, [], None)]
    assert client.post("/api/v1/fleet/health:score", json={}, headers=tokens["viewer"]).status_code == 403
    scored = client.post("/api/v1/fleet/health:score", json={}, headers=tokens["operator"])
    assert scored.status_code == 200, scored.text
    items = scored.json()["items"]
    assert [i["table_id"] for i in items] == [left_id, clean_id], "worst first"
    assert items[1]["score"] == 100 and items[1]["reasons"] == [], "an attempt whose retry is to come costs nothing"
    assert {r["kind"] for r in items[0]["reasons"]} == {"failed_plans", "orphan_files"}
    assert {"kind": "failed_plans", "penalty": 10, "message": "1 task(s) failed for good"} in items[0]["reasons"]
    assert items[0]["score"] == 80 and scored.json()["by_status"] == {"ok": 2}
    assert client.post("/api/v1/fleet/health:score", json={"table_ids": [987654]},
                       headers=tokens["operator"]).status_code == 404
    metrics = client.get("/metrics").text
    assert f'tms_table_health_score{{database="default",table="leftover_t",table_id="{left_id}"}} 80.0' in metrics
    assert 'tms_tables_by_health{status="ok"} 2.0' in metrics

    detail = client.get(f"/api/v1/tables/{left_id}", headers=tokens["viewer"]).json()
    assert detail["health"]["score"] == 80
    assert any("1 orphan file(s)" in r for r in detail["health"]["reasons"])

    listed = client.get(f"/api/v1/tables/{left_id}/orphans", headers=tokens["viewer"]).json()
    assert [o["path"] for o in listed["orphans"]] == [old], "the young leftover may be a write under way"
    assert listed["safety_hours"] == 24 and listed["total_bytes"] == os.path.getsize(f"{left_path}/{old}")

    rows_before = read_snapshot(HudiTable.load(left_path)).sort_by("id").to_pylist()
    leftovers = (old.split("/")[1], young.split("/")[1])  # a live file is neither (listing order is the disk's)
    live_file = next(e for e in os.listdir(f"{left_path}/city=sf") if e.endswith(".parquet")
                     and e not in leftovers and not e.startswith("."))
    body = {"paths": [old, young, f"city=sf/{live_file}"]}
    assert client.post(f"/api/v1/tables/{left_id}/orphans:remove", json=body,
                       headers=tokens["operator"]).status_code == 403
    removed = client.post(f"/api/v1/tables/{left_id}/orphans:remove", json=body, headers=tokens["admin"])
    assert removed.status_code == 200, removed.text
    assert [o["path"] for o in removed.json()["removed"]] == [old]
    assert removed.json()["kept"] == [young, f"city=sf/{live_file}"]
    assert not os.path.exists(f"{left_path}/{old}") and os.path.exists(f"{left_path}/{young}")
    assert os.path.exists(f"{left_path}/city=sf/{live_file}")
    assert read_snapshot(HudiTable.load(left_path)).sort_by("id").to_pylist() == rows_before
    assert client.get(f"/api/v1/tables/{left_id}/orphans", headers=tokens["viewer"]).json()["orphans"] == []


def test_the_fleet_page_shows_the_worst_tables_first_and_the_templates(client, tokens, lake, app):
    from test_svc_dashboard import _sign_in

    client.put("/api/v1/policy-templates/lake", json={"path_prefix": lake, "queue": "bulk"}, headers=tokens["admin"])
    clean_id = _register(client, tokens, f"{lake}/clean_t")
    left_id = _register(client, tokens, f"{lake}/leftover_t")
    _leftover(f"{lake}/leftover_t", 1000, 2 * DAY)
    _sign_in(client, tokens["viewer"])
    page = client.get("/ui/fleet").text
    assert re.findall(r'<tr data-table-id="(\d+)">', page) == [str(clean_id), str(left_id)], "listed at once"
    assert page.count("not yet scored") == 3  # the count above the table, and each row
    client.post("/api/v1/fleet/health:score", json={"table_ids": [clean_id, left_id]}, headers=tokens["operator"])
    page = client.get("/ui/fleet").text
    rows = re.findall(r'<tr data-table-id="(\d+)">', page)
    assert rows == [str(left_id), str(clean_id)], "worst first"
    assert "1 orphan file(s)" in page and "(-10)" in page and "nothing to say" in page
    assert re.search(r'<tr data-template="lake">.*?<td class="num">2</td>', page, re.S)
    assert '<a href="/ui/fleet" class="here">Fleet</a>' in page
    client.cookies.clear()  # the client is the session's: the next test starts signed out


def test_backlog_over_time_per_hour_for_the_fleet_and_each_table(client, tokens, lake, app):
    """Each score is kept as a sample: the fleet's hours count each table as its last score in the hour showed
    it, and sum their pending log bytes; a table's history lists its scores; samples past the history are
    forgotten by the retention; the fleet and table pages chart them."""
    from datetime import UTC, datetime, timedelta

    from test_svc_dashboard import _sign_in

    from tms.db import HealthRepo, RetentionRepo

    clean_id = _register(client, tokens, f"{lake}/clean_t")
    left_id = _register(client, tokens, f"{lake}/leftover_t")
    now = datetime.now(UTC)
    earlier = (now - timedelta(hours=3)).replace(minute=10)
    with app.state.database.transaction() as session:
        health = HealthRepo(session)
        # Two scores of one table in one hour: the later one counts.
        health.record_sample(left_id, sampled_at=earlier, score=50, status="warning", log_bytes=9_000, log_files=9,
                             oldest_uncompacted_seconds=3600)
        health.record_sample(left_id, sampled_at=earlier + timedelta(minutes=20), score=70, status="warning",
                             log_bytes=7_000, log_files=7, oldest_uncompacted_seconds=4800)
        health.record_sample(clean_id, sampled_at=earlier, score=100, status="ok", log_bytes=1_000, log_files=1,
                             oldest_uncompacted_seconds=None)
        health.record_sample(clean_id, sampled_at=now - timedelta(days=30), score=10, status="error", log_bytes=None,
                             log_files=None, oldest_uncompacted_seconds=None)
    scored = client.post("/api/v1/fleet/health:score", json={"table_ids": [clean_id, left_id]},
                         headers=tokens["operator"])
    assert scored.status_code == 200, scored.text
    pending = {table_id: sum(g.log_bytes or 0 for g in HudiTable.load(f"{lake}/{name}").file_system_view()
                             .file_group_stats())
               for table_id, name in ((clean_id, "clean_t"), (left_id, "leftover_t"))}
    assert all(pending.values()), "each table has an upsert's logs pending"

    backlog = client.get("/api/v1/fleet/backlog", params={"hours": 6}, headers=tokens["viewer"])
    assert backlog.status_code == 200, backlog.text
    hours = backlog.json()["items"]
    assert [h["tables_by_status"] for h in hours] == [{"ok": 1, "warning": 1}, {"ok": 2}]
    assert [h["log_bytes"] for h in hours] == [8_000, sum(pending.values())]
    assert hours[0]["log_files"] == 8
    assert datetime.fromisoformat(hours[0]["hour"]) == earlier.replace(minute=0, second=0, microsecond=0)

    history = client.get(f"/api/v1/tables/{left_id}/health/history", params={"hours": 6},
                         headers=tokens["viewer"]).json()
    assert [(s["score"], s["log_bytes"]) for s in history["samples"]][:2] == [(50, 9_000), (70, 7_000)]
    assert history["samples"][-1]["log_bytes"] == pending[left_id] and len(history["samples"]) == 3
    assert client.get("/api/v1/tables/987654/health/history", headers=tokens["viewer"]).status_code == 404
    assert client.get("/api/v1/fleet/backlog", params={"hours": 0}, headers=tokens["viewer"]).status_code == 422

    with app.state.database.transaction() as session:
        RetentionRepo(session).purge_health_samples(timedelta(days=7), 100)
    with app.state.database.transaction() as session:
        kept = HealthRepo(session).samples(clean_id, now - timedelta(days=60))
    assert [s.score for s in kept] == [100, 100], "the 30-day-old sample is forgotten"

    _sign_in(client, tokens["viewer"])
    page = client.get("/ui/fleet").text
    assert '<svg class="fleet-backlog"' in page and '<svg class="fleet-health"' in page
    assert re.search(r'<rect class="bar warning"[^>]*><title>[^<]*: 1 warning</title>', page)
    table_page = client.get(f"/ui/tables/{left_id}").text
    assert '<svg class="table-backlog"' in table_page and "6.8 KB log-bytes" in table_page
