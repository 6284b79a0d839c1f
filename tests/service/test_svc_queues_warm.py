"""A queue's warm engine settings: PUT /api/v1/queues/{name} stores them, GET shows them, bad values change
nothing; an attempt's engine shows in the task's attempts."""
from __future__ import annotations

from tms.db import TaskRepo, TaskState

WARM = {"warm_engine_enabled": True, "warm_engine_executors": 3, "warm_engine_executor_memory_mb": 2048,
        "warm_engine_executor_cores": 2}


def test_a_queue_keeps_its_warm_engine_settings(client, tokens):
    admin, viewer = tokens["admin"], tokens["viewer"]
    body = {"kind": "local", "master": "local[4]", "capacity": 2}
    created = client.put("/api/v1/queues/small", json=body, headers=admin)
    assert created.status_code == 200
    assert {k: created.json()[k] for k in WARM} == {"warm_engine_enabled": False, "warm_engine_executors": 2,
                                                    "warm_engine_executor_memory_mb": 1024,
                                                    "warm_engine_executor_cores": 1}
    assert client.put("/api/v1/queues/small", json={**body, **WARM}, headers=admin).status_code == 200
    (queue,) = client.get("/api/v1/queues", headers=viewer).json()
    assert {k: queue[k] for k in WARM} == WARM

    for bad in ({"warm_engine_executors": 0}, {"warm_engine_executor_memory_mb": 100},
                {"warm_engine_enabled": "maybe"}):
        refused = client.put("/api/v1/queues/small", json={**body, **WARM, **bad}, headers=admin)
        assert refused.status_code == 422, refused.text
        assert next(iter(bad)) in refused.json()["detail"]
    (queue,) = client.get("/api/v1/queues", headers=viewer).json()
    assert {k: queue[k] for k in WARM} == WARM, "a refused PUT changes nothing"


def test_an_attempt_shows_the_engine_it_ran_on(client, app, tokens, register):
    table = register("cow_v6_nonpartitioned")
    with app.state.database.transaction() as session:
        tasks = TaskRepo(session)
        created, _ = tasks.create(table_id=table["id"], service="clean", instant="20240418173552000",
                                  state=TaskState.RUNNABLE)
        claimed = tasks.claim_next(owner="w", lease_seconds=60, queue="small")
        tasks.record_engine(claimed.id, fencing_token=claimed.fencing_token, engine_kind="warm")
    shown = client.get(f"/api/v1/tasks/{created.id}", headers=tokens["viewer"])
    assert shown.status_code == 200
    assert [a["engine_kind"] for a in shown.json()["attempts"]] == ["warm"]
