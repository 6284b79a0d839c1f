"""Queues, tokens, instances, alerts, health and metrics."""
from __future__ import annotations

from service.app import create_app
from tms.db import AlertRepo, Database, TaskRepo, TaskState


def test_queues(client, app, tokens, register):
    admin, viewer = tokens["admin"], tokens["viewer"]
    body = {"kind": "standalone", "master": "spark://localhost:7077", "capacity": 2,
            "spark_conf": {"spark.executor.cores": "2"}, "allowed_actions": ["compaction"]}
    created = client.put("/api/v1/queues/batch-1", json=body, headers=admin)
    assert created.status_code == 200 and created.json()["capacity"] == 2
    replaced = client.put("/api/v1/queues/batch-1", json={**body, "capacity": 4}, headers=admin)
    assert replaced.json()["capacity"] == 4
    table = register("cow_v6_nonpartitioned")
    with app.state.database.transaction() as session:
        TaskRepo(session).create(table_id=table["id"], service="clean", instant="20240418173552000",
                                 state=TaskState.RUNNABLE)
        TaskRepo(session).claim_next(owner="w", lease_seconds=60, queue="batch-1")
    (queue,) = client.get("/api/v1/queues", headers=viewer).json()
    assert (queue["name"], queue["running"], queue["allowed_actions"]) == ("batch-1", 1, ["compaction"])
    bad = client.put("/api/v1/queues/batch-1", json={**body, "kind": "mesos"}, headers=admin)
    assert bad.status_code == 422 and "body.kind" in bad.json()["detail"]
    assert client.put("/api/v1/queues/bad name", json=body, headers=admin).status_code == 422
    assert client.delete("/api/v1/queues/batch-1", headers=admin).status_code == 204
    assert client.delete("/api/v1/queues/batch-1", headers=admin).status_code == 404


def test_token_api_creates_working_tokens(client, tokens):
    created = client.post("/api/v1/tokens", json={"role": "operator", "name": "ops"}, headers=tokens["env_admin"])
    assert created.status_code == 201 and created.json()["token"].startswith("tms_")
    headers = {"Authorization": f"Bearer {created.json()['token']}"}
    assert client.get("/api/v1/tasks", headers=headers).status_code == 200
    assert client.post("/api/v1/tokens", json={"role": "root"}, headers=tokens["admin"]).status_code == 422


def test_instances_lists_this_service(client, app, tokens):
    app.state.heartbeat.beat()
    instances = client.get("/api/v1/instances", headers=tokens["viewer"]).json()
    assert any(i["id"] == app.state.heartbeat.instance_id and i["roles"] == ["service"] for i in instances)


def test_alerts(client, app, tokens, register):
    table = register("cow_v6_nonpartitioned")
    with app.state.database.transaction() as session:
        AlertRepo(session).raise_alert(kind="plan_sync_failed", severity="critical", message="plan is inflight",
                                       fingerprint="x", table_id=table["id"])
        AlertRepo(session).raise_alert(kind="task_failed", severity="warning", message="m", fingerprint="y")
    viewer = tokens["viewer"]
    everything = client.get("/api/v1/alerts", headers=viewer).json()
    assert everything["total"] == 2 and everything["items"][0]["kind"] == "task_failed"
    critical = client.get("/api/v1/alerts", params={"severity": "critical", "table_id": table["id"]},
                          headers=viewer).json()
    assert [a["message"] for a in critical["items"]] == ["plan is inflight"]
    assert client.get("/api/v1/alerts", params={"severity": "loud"}, headers=viewer).status_code == 422


def test_readyz_reports_migrations(client):
    body = client.get("/readyz").json()
    assert body["status"] == "ok" and body["database"] == "ok" and body["migrations"]


def test_readyz_says_which_dependency_is_down_and_not_the_drivers_error(settings, caplog):
    from fastapi.testclient import TestClient

    url = "postgresql://tms_user:hunter2@127.0.0.1:9/tms_meta?connect_timeout=2"
    database = Database(url)
    try:
        answer = TestClient(create_app(settings.model_copy(update={"database_url": url}), database)).get("/readyz")
    finally:
        database.dispose()
    assert answer.status_code == 503
    assert answer.json() == {"status": "unavailable", "database": "unreachable"}  # no host, port or user
    assert "127.0.0.1" in caplog.text  # the driver's error goes to the log, for the operator


def test_metrics(client, register, callback_headers, app):
    table = register("cow_v6_nonpartitioned")
    event = {"table_id": table["id"], "instant": "20240418173552000", "action": "commit"}
    client.post("/api/v1/events", json=event, headers=callback_headers)
    client.post("/api/v1/events", json=event, headers=callback_headers)
    client.post("/api/v1/events", json={**event, "table_id": 987654}, headers=callback_headers)
    with app.state.database.transaction() as session:
        TaskRepo(session).create(table_id=table["id"], service="clean", instant="20240418173553000",
                                 state=TaskState.BLOCKED)
    text = client.get("/metrics").text
    assert 'tms_events_total{kind="api",result="stored"}' in text
    assert 'tms_events_total{kind="api",result="duplicate"}' in text
    assert 'tms_events_total{kind="api",result="unknown_table"}' in text
    assert 'tms_tasks{state="BLOCKED"} 1.0' in text and 'tms_tasks{state="RUNNING"} 0.0' in text
    assert 'tms_http_request_duration_seconds_count{method="POST",route="/api/v1/events",status="202"}' in text
