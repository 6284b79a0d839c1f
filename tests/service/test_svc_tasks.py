"""Tasks through the API: listing, detail with attempts, and operator actions with clear 409s."""
from __future__ import annotations

import pytest

from tms.db import TaskRepo, TaskState
from tms.task_payload import PlanStatistics

S = TaskState


@pytest.fixture
def make_task(app, register):
    table = register("mor_v6_trips_8i1u")

    def _make(state: TaskState, instant: str = "20250331040000000", **kw):
        with app.state.database.transaction() as session:
            task, _ = TaskRepo(session).create(table_id=table["id"], service="compaction", instant=instant,
                                               state=state, **kw)
            return task.id

    _make.table_id = table["id"]
    return _make


def test_list_and_detail_with_attempts(client, app, make_task, tokens):
    first = make_task(S.RUNNABLE, "20250331040000001", payload=PlanStatistics(operations=2, largest_bytes=10))
    make_task(S.FAILED, "20250331040000002")
    with app.state.database.transaction() as session:
        claimed = TaskRepo(session).claim_next(owner="worker-1", lease_seconds=60)
        TaskRepo(session).finish(claimed.id, fencing_token=claimed.fencing_token, succeeded=False, error="boom")
    viewer = tokens["viewer"]
    page = client.get("/api/v1/tasks", headers=viewer).json()
    assert page["total"] == 2 and [t["instant"] for t in page["items"]] == ["20250331040000002", "20250331040000001"]
    failed = client.get("/api/v1/tasks", params={"state": "FAILED", "table_id": make_task.table_id,
                                                 "action": "compaction"}, headers=viewer).json()
    assert failed["total"] == 2
    assert client.get("/api/v1/tasks", params={"since": "2999-01-01T00:00:00Z"}, headers=viewer).json()["total"] == 0
    detail = client.get(f"/api/v1/tasks/{first}", headers=viewer).json()
    assert detail["plan_stats"] == {"operations": 2, "largest_bytes": 10} and detail["error"] == "boom"
    assert [(a["attempt"], a["worker"], a["outcome"]) for a in detail["attempts"]] == [(1, "worker-1", "FAILED")]


def test_operator_actions(client, make_task, tokens):
    task = make_task(S.FAILED)
    operator = tokens["operator"]
    rerun = client.post(f"/api/v1/tasks/{task}:rerun", headers=operator)
    assert rerun.status_code == 200 and rerun.json()["state"] == "RUNNABLE"
    assert client.post(f"/api/v1/tasks/{task}:suspend", headers=operator).json()["state"] == "SUSPENDED"
    assert client.post(f"/api/v1/tasks/{task}:resume", headers=operator).json()["state"] == "RUNNABLE"
    assert client.post(f"/api/v1/tasks/{task}:cancel", headers=operator).json()["state"] == "CANCELLED"
    again = client.post(f"/api/v1/tasks/{task}:cancel", headers=operator)
    assert again.status_code == 409 and "it is CANCELLED" in again.json()["detail"]


@pytest.mark.parametrize("action, state", [("rerun", S.SUCCEEDED), ("rerun", S.RUNNABLE), ("resume", S.RUNNABLE),
                                           ("suspend", S.SUCCEEDED), ("cancel", S.SUCCEEDED)])
def test_illegal_actions_are_409(client, make_task, tokens, action, state):
    task = make_task(state)
    response = client.post(f"/api/v1/tasks/{task}:{action}", headers=tokens["operator"])
    assert response.status_code == 409
    assert f"cannot {action} task {task}: it is {state}" in response.json()["detail"]


def test_action_errors(client, make_task, tokens):
    task = make_task(S.FAILED)
    assert client.post("/api/v1/tasks/999999:rerun", headers=tokens["operator"]).status_code == 404
    assert client.post("/api/v1/tasks/abc:rerun", headers=tokens["operator"]).status_code == 422
    assert client.post(f"/api/v1/tasks/{task}:explode", headers=tokens["operator"]).status_code in (404, 405)
    assert client.post(f"/api/v1/tasks/{task}:rerun", headers=tokens["viewer"]).status_code == 403
    assert client.post(f"/api/v1/tasks/{task}:rerun").status_code == 401
    assert client.get("/api/v1/tasks/999999", headers=tokens["viewer"]).status_code == 404
    assert client.get("/api/v1/tasks", params={"state": "DONE"}, headers=tokens["viewer"]).status_code == 422


def test_actions_appear_in_openapi(client):
    paths = client.get("/openapi.json").json()["paths"]
    for action in ("rerun", "suspend", "resume", "cancel"):
        operation = paths[f"/api/v1/tasks/{{task_id}}:{action}"]["post"]
        assert operation["operationId"] == f"{action}_task"


def test_tasks_filter_by_table_service_not_timeline_action(client, app, register, tokens):
    table = register("mor_v6_trips_8i1u")
    with app.state.database.transaction() as session:
        for n, service in enumerate(("compaction", "clustering", "clean")):
            TaskRepo(session).create(table_id=table["id"], service=service, instant=f"2025033104000000{n}",
                                     state=S.RUNNABLE)
    viewer = tokens["viewer"]
    page = client.get("/api/v1/tasks", params={"service": "clustering"}, headers=viewer).json()
    assert [t["service"] for t in page["items"]] == ["clustering"] and page["total"] == 1
    # A timeline action is not a table service: a clustering completes as a replacecommit.
    refused = client.get("/api/v1/tasks", params={"service": "replacecommit"}, headers=viewer)
    assert refused.status_code == 422 and "query.service" in refused.json()["detail"]
    assert client.get("/api/v1/tasks", params={"action": "clean"}, headers=viewer).json()["total"] == 1
