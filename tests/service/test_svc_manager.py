"""The manager's API: the leader and its standbys, alerts with their state, counts and filters, mutes and
webhooks (admin) with their deliveries."""
from __future__ import annotations

import time

from sqlalchemy import text, update

from tms.db import AlertRepo, InstanceRepo, LeaseRepo, Sighting, TaskRepo, TaskState
from tms.db.models import Instance, RegisteredTable


def test_manager_shows_the_leader_its_epoch_and_the_standbys(client, app, tokens):
    viewer = tokens["viewer"]
    assert client.get("/api/v1/manager", headers=viewer).json() == {
        "leader": None, "epoch": 0, "since": None, "last_work_at": None, "standbys": []}
    with app.state.database.transaction() as session:
        assert LeaseRepo(session).acquire("manager", "m1", 30) == 1
        for name in ("m1", "m2"):
            InstanceRepo(session).heartbeat(name, roles=["manager"], host="h", pid=1, version="v")
    body = client.get("/api/v1/manager", headers=viewer).json()
    assert body["leader"] == "m1" and body["epoch"] == 1 and body["since"] is not None
    assert [s["instance"] for s in body["standbys"]] == ["m2"]


def test_alerts_carry_state_severity_subject_counts_and_filter(client, app, tokens, register):
    table = register("cow_v6_nonpartitioned")
    with app.state.database.transaction() as session:
        alerts = AlertRepo(session)
        alerts.fire("table_unreadable", f"table:{table['id']}", Sighting("warning", "gone", table_id=table["id"]))
        alerts.fire("table_unreadable", f"table:{table['id']}", Sighting("warning", "still gone", table_id=table["id"]))
        alerts.fire("instance_down", "instance:w1", Sighting("critical", "silent"))
        alerts.resolve("instance_down:instance:w1")
    viewer = tokens["viewer"]
    firing = client.get("/api/v1/alerts", params={"state": "firing"}, headers=viewer).json()
    assert firing["total"] == 1
    alert = firing["items"][0]
    assert (alert["type"], alert["severity"], alert["state"], alert["subject"], alert["count"], alert["muted"],
            alert["message"]) == ("table_unreadable", "warning", "firing", f"table:{table['id']}", 2, False,
                                  "still gone")
    assert alert["first_seen"] <= alert["last_seen"]
    resolved = client.get("/api/v1/alerts", params={"type": "instance_down"}, headers=viewer).json()["items"]
    assert [(a["state"], a["resolved_at"] is not None) for a in resolved] == [("resolved", True)]
    assert client.get("/api/v1/alerts", params={"type": "no_such_type"}, headers=viewer).status_code == 422
    assert client.get("/api/v1/alerts", params={"state": "open"}, headers=viewer).status_code == 422


def test_mutes_are_created_listed_and_deleted_and_mark_alerts_muted(client, app, tokens, register):
    table = register("cow_v6_nonpartitioned", owner="team-a")
    admin = tokens["admin"]
    bad = client.post("/api/v1/mutes", json={"alert_types": ["nonsense"]}, headers=admin)
    assert bad.status_code == 422
    assert client.post("/api/v1/mutes", json={"table_id": 999999}, headers=admin).status_code == 404
    assert client.post("/api/v1/mutes", json={"owner": "team-a", "expires_at": "2030-01-01T00:00:00"},
                       headers=admin).status_code == 422  # no time zone
    assert client.get("/api/v1/mutes", headers=admin).json() == []
    created = client.post("/api/v1/mutes", json={"owner": "team-a", "alert_types": ["task_failed"],
                                                 "reason": "migration"}, headers=admin)
    assert created.status_code == 201, created.text
    mute = created.json()
    assert mute["owner"] == "team-a" and mute["alert_types"] == ["task_failed"]
    assert [m["id"] for m in client.get("/api/v1/mutes", headers=tokens["viewer"]).json()] == [mute["id"]]
    with app.state.database.transaction() as session:
        alerts = AlertRepo(session)
        muted, _ = alerts.fire("task_failed", "task:1", Sighting("critical", "m", table_id=table["id"]))
        other, _ = alerts.fire("planning_failed", "table:1", Sighting("warning", "m", table_id=table["id"]))
        assert (muted.muted, other.muted) == (True, False)
    listed = client.get("/api/v1/alerts", params={"muted": True}, headers=tokens["viewer"]).json()["items"]
    assert [a["type"] for a in listed] == ["task_failed"]
    assert client.delete(f"/api/v1/mutes/{mute['id']}", headers=admin).status_code == 204
    assert client.delete(f"/api/v1/mutes/{mute['id']}", headers=admin).status_code == 404
    assert client.get("/api/v1/mutes", headers=admin).json() == []


def test_webhooks_crud_without_showing_secrets_and_their_deliveries(client, app, tokens):
    admin = tokens["admin"]
    for bad in ({"url": "not a url"}, {"url": "http://x", "format": "xml"}, {"url": "http://x", "secret": "short"},
                {"url": "http://x", "min_severity": "loud"}, {"url": "http://x", "alert_types": ["nope"]},
                {"url": "http://x", "enabled": 0}, {"url": "http://x", "enabled": "false"}):
        assert client.post("/api/v1/webhooks", json=bad, headers=admin).status_code == 422, bad
    assert client.get("/api/v1/webhooks", headers=admin).json() == []
    created = client.post("/api/v1/webhooks", json={"url": "http://127.0.0.1:9/hook", "secret": "s3cret-value",
                                                    "alert_types": ["task_failed"], "min_severity": "warning",
                                                    "format": "slack"}, headers=admin)
    assert created.status_code == 201, created.text
    hook = created.json()
    assert hook["has_secret"] and "secret" not in hook and hook["format"] == "slack"
    assert hook["alert_types"] == ["task_failed"] and hook["min_severity"] == "warning"
    changed = client.patch(f"/api/v1/webhooks/{hook['id']}", json={"format": "json", "alert_types": []},
                           headers=admin)
    assert changed.status_code == 200 and changed.json()["format"] == "json" and changed.json()["alert_types"] == []
    assert client.patch(f"/api/v1/webhooks/{hook['id']}", json={"url": None}, headers=admin).status_code == 422
    assert client.patch(f"/api/v1/webhooks/{hook['id']}", json={"enabled": 1}, headers=admin).status_code == 422
    assert client.patch("/api/v1/webhooks/999999", json={"enabled": False}, headers=admin).status_code == 404
    with app.state.database.transaction() as session:
        AlertRepo(session).fire("task_failed", "task:5", Sighting("critical", "boom"))
        AlertRepo(session).fire("not_scheduled", "task:6", Sighting("info", "waiting"))  # below min_severity
    deliveries = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=admin).json()
    assert deliveries["total"] == 1
    delivery = deliveries["items"][0]
    assert (delivery["event"], delivery["state"], delivery["attempts"]) == ("firing", "pending", 0)
    assert '"type":"task_failed"' in delivery["body"]
    assert client.get("/api/v1/webhooks/999999/deliveries", headers=admin).status_code == 404
    assert client.delete(f"/api/v1/webhooks/{hook['id']}", headers=admin).status_code == 204
    assert client.delete(f"/api/v1/webhooks/{hook['id']}", headers=admin).status_code == 404


def test_metrics_show_every_roles_work_from_the_database(client, app, tokens):
    with app.state.database.transaction() as session:
        LeaseRepo(session).acquire("manager", "m1", 30)
        AlertRepo(session).fire("task_failed", "task:9", Sighting("critical", "boom"))
    text = client.get("/metrics").text
    assert 'tms_manager_leader{instance="m1"} 1.0' in text and "tms_manager_epoch 1.0" in text
    assert 'tms_alerts_firing{severity="critical",type="task_failed"} 1.0' in text
    for family in ("tms_tasks_by", "tms_task_duration_seconds", "tms_task_wait_seconds", "tms_planner_lag_seconds",
                   "tms_queue_capacity"):
        assert f"# TYPE {family}" in text, family


def test_metrics_show_each_tables_uncompacted_delta_commits_and_oldest_pending_write(client, app, register):
    table = register("mor_v6_trips_8i1u")
    seen = time.time() - 100
    with app.state.database.transaction() as session:
        session.execute(update(RegisteredTable).where(RegisteredTable.id == table["id"]).values(planner_state={
            "counted": {"compaction": ["20250101000000000", "20250101000001000", "20250101000002000"]},
            "pending_writes": {"20250101000003000": seen + 40, "20250101000004000": seen}}))
    lines = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in client.get("/metrics").text.splitlines()
             if line.startswith("tms_table_")}
    labels = f'{{database="{table["database"]}",table="{table["name"]}",table_id="{table["id"]}"}}'
    assert lines[f"tms_table_uncompacted_delta_commits{labels}"] == 3
    assert 100 <= lines[f"tms_table_oldest_pending_instant_age_seconds{labels}"] < 100 + 600


def test_metrics_show_each_tables_newest_backup(client, app, register):
    table = register("mor_v6_trips_8i1u")
    with app.state.database.transaction() as session:
        tasks = TaskRepo(session)
        for instant, version, copied in (("20250101000000000", 1, 5000), ("20250102000000000", 2, 120)):
            task, _ = tasks.create(table_id=table["id"], service="backup", instant=instant, state=TaskState.RUNNABLE)
            claimed = tasks.claim(task.id, expected_version=task.version, owner="w", lease_seconds=60)
            tasks.finish(task.id, fencing_token=claimed.fencing_token, succeeded=True,
                         result={"action": "backup", "version": version, "bytes_copied": copied})
    lines = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in client.get("/metrics").text.splitlines()
             if line.startswith("tms_backup_")}
    labels = f'{{database="{table["database"]}",table="{table["name"]}",table_id="{table["id"]}"}}'
    assert lines[f"tms_backup_last_version{labels}"] == 2
    assert lines[f"tms_backup_last_bytes_copied{labels}"] == 120
    assert abs(lines[f"tms_backup_last_success_timestamp_seconds{labels}"] - time.time()) < 600


def test_an_instance_down_alert_is_acknowledged_by_an_operator_and_forgets_the_instance(client, app, tokens):
    with app.state.database.transaction() as session:
        InstanceRepo(session).heartbeat("h:1:dead", roles=["worker"], host="h", pid=1, version="v")
        session.execute(update(Instance).where(Instance.id == "h:1:dead")
                        .values(heartbeat_at=text("now() - interval '1 hour'")))
        down, _ = AlertRepo(session).fire("instance_down", "instance:h:1:dead", Sighting("warning", "silent"))
        other, _ = AlertRepo(session).fire("table_unreadable", "table:1", Sighting("warning", "gone"))
    ack = f"/api/v1/alerts/{down.id}:acknowledge"
    assert client.post(ack, headers=tokens["viewer"]).status_code == 403
    answer = client.post(ack, headers=tokens["operator"])
    assert answer.status_code == 200, answer.text
    assert (answer.json()["state"], answer.json()["subject"]) == ("resolved", "instance:h:1:dead")
    with app.state.database.transaction() as session:
        assert "h:1:dead" not in [i.id for i in InstanceRepo(session).list()]  # forgotten: it fires no more
    again = client.post(ack, headers=tokens["operator"])  # already resolved: answered as it is
    assert again.status_code == 200 and again.json()["resolved_at"] == answer.json()["resolved_at"]
    refused = client.post(f"/api/v1/alerts/{other.id}:acknowledge", headers=tokens["operator"])
    assert refused.status_code == 409 and "resolves when its condition clears" in refused.json()["detail"]
    assert client.post("/api/v1/alerts/999999:acknowledge", headers=tokens["operator"]).status_code == 404
