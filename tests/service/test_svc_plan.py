"""`POST /api/v1/tables/{id}:plan`: an operator's request to plan a table service now, run under the table's
planning lock whatever the service's trigger says; the plan is on the timeline and its task recorded."""
from __future__ import annotations

import secrets
import shutil

from tms.db import TableRepo, TaskRepo
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action


def _copy(hudi_tables, name: str):
    """A writable copy of a fixture table, under the service's storage root."""
    source = hudi_tables[name]
    copy = source.parent / f"{name}-plan-{secrets.token_hex(4)}"
    shutil.copytree(source, copy)
    return copy


def test_plan_now_writes_the_plan_and_records_its_task(client, tokens, hudi_tables, app):
    path = _copy(hudi_tables, "mor_v8_trips_8i3u1d")
    table = client.post("/api/v1/tables", json={"base_path": str(path)}, headers=tokens["admin"]).json()
    response = client.post(f"/api/v1/tables/{table['id']}:plan", json={"service": "compaction"},
                           headers=tokens["operator"])
    assert response.status_code == 200, response.text
    body = response.json()
    [task] = body["tasks"]
    assert (body["table_id"], body["service"], task["service"], task["state"]) == (
        table["id"], "compaction", "compaction", "RUNNABLE")
    assert task["plan_stats"]["operations"] >= 1
    assert task["instant"] in [i.timestamp for i in HudiTable.load(str(path)).timeline.pending([Action.COMPACTION])]
    with app.state.database.transaction() as session:
        assert TaskRepo(session).for_instant(table["id"], task["instant"]).id == task["id"]
        assert TableRepo(session).get(table["id"]).planned_at is not None
    again = client.post(f"/api/v1/tables/{table['id']}:plan", json={"service": "compaction"},
                        headers=tokens["operator"])
    assert again.status_code == 200 and again.json()["tasks"] == []  # every file group is in the pending plan


def test_plan_now_refusals(client, tokens, hudi_tables, register):
    cow = register("cow_v8_nonpartitioned")
    refused = client.post(f"/api/v1/tables/{cow['id']}:plan", json={"service": "compaction"},
                          headers=tokens["operator"])
    assert refused.status_code == 422 and "MERGE_ON_READ" in refused.json()["detail"]
    missing = client.post("/api/v1/tables/999999:plan", json={"service": "clean"}, headers=tokens["operator"])
    assert (missing.status_code, missing.json()["detail"]) == (404, "no table with id 999999")
    client.patch(f"/api/v1/tables/{cow['id']}", json={"enabled": False}, headers=tokens["admin"])
    disabled = client.post(f"/api/v1/tables/{cow['id']}:plan", json={"service": "clean"}, headers=tokens["operator"])
    assert disabled.status_code == 409 and "disabled" in disabled.json()["detail"]
    unknown = client.post(f"/api/v1/tables/{cow['id']}:plan", json={"service": "vacuum"}, headers=tokens["operator"])
    assert unknown.status_code == 422 and unknown.json()["detail"].startswith("body.service:")


def test_plan_now_waits_for_a_planner_holding_the_table_then_gives_up(client, tokens, register, app):
    cow = register("cow_v8_nonpartitioned")
    with app.state.database.transaction() as session:  # a planner holds the table's planning lock
        assert TableRepo(session).lock_for_planning(cow["id"]) is not None
        held = client.post(f"/api/v1/tables/{cow['id']}:plan", json={"service": "clean"}, headers=tokens["operator"])
    assert held.status_code == 409 and "being planned by another process" in held.json()["detail"]
