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
    with app.state.database.transaction() as session:  # a failed plan on the same table
        TaskRepo(session).create(table_id=left_id, service="compaction", instant="20990101000000000",
                                 state=TaskState.FAILED)

    assert client.get("/api/v1/fleet/health", headers=tokens["viewer"]).json() == {"by_status": {}, "items": []}
    assert client.post("/api/v1/fleet/health:score", json={}, headers=tokens["viewer"]).status_code == 403
    scored = client.post("/api/v1/fleet/health:score", json={}, headers=tokens["operator"])
    assert scored.status_code == 200, scored.text
    items = scored.json()["items"]
    assert [i["table_id"] for i in items] == [left_id, clean_id], "worst first"
    assert items[1]["score"] == 100 and items[1]["reasons"] == []
    assert {r["kind"] for r in items[0]["reasons"]} == {"failed_plans", "orphan_files"}
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
    assert "No table scored yet." in client.get("/ui/fleet").text
    client.post("/api/v1/fleet/health:score", json={"table_ids": [clean_id, left_id]}, headers=tokens["operator"])
    page = client.get("/ui/fleet").text
    rows = re.findall(r'<tr data-table-id="(\d+)">', page)
    assert rows == [str(left_id), str(clean_id)], "worst first"
    assert "1 orphan file(s)" in page and "(-10)" in page and "nothing to say" in page
    assert re.search(r'<tr data-template="lake">.*?<td class="num">2</td>', page, re.S)
    assert '<a href="/ui/fleet" class="here">Fleet</a>' in page
