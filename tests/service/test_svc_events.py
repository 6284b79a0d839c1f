"""TMS's own events, one or in batches: idempotent, all-or-nothing, authenticated, validated."""
from __future__ import annotations

import json

from service.schemas.events import EventBatch, checked_batch
from tms.db import EventRepo


def _count(app):
    with app.state.database.transaction() as session:
        return EventRepo(session).count()


def test_event_by_id_and_by_base_path(client, app, register, hudi_tables, tokens, callback_headers):
    table = register("mor_v8_trips_8i3u1d")
    event = {"table_id": table["id"], "instant": "20251220210100000", "action": "deltacommit", "state": "inflight"}
    assert client.post("/api/v1/events", json=event, headers=callback_headers).json()["stored"] == 1
    by_path = {**event, "table_id": None, "base_path": str(hudi_tables["mor_v8_trips_8i3u1d"]) + "/./"}
    again = client.post("/api/v1/events", json=by_path, headers=tokens["operator"])
    assert again.status_code == 202 and again.json()["duplicates"] == 1
    done = {**event, "state": "completed", "completion_time": "20251220210105000",
            "write_stats": [{"fileId": "f", "logFiles": ["a.log"]}], "future_field": 1}
    assert client.post("/api/v1/events", json=done, headers=callback_headers).json()["stored"] == 1
    assert _count(app) == 2


def test_batch_is_idempotent_and_all_or_nothing(client, app, register, callback_headers):
    table = register("mor_v6_trips_8i1u")
    events = [{"table_id": table["id"], "instant": f"2025033103{i:05d}00", "action": "deltacommit"}
              for i in range(200)]
    first = client.post("/api/v1/events:batch", json={"events": events + events[:10]}, headers=callback_headers)
    assert first.status_code == 202 and first.json() == {"received": 210, "stored": 200, "duplicates": 10}
    mixed = events[:5] + [{"table_id": 999999, "instant": "20250331030959000", "action": "commit"}]
    rejected = client.post("/api/v1/events:batch", json={"events": mixed}, headers=callback_headers)
    assert rejected.status_code == 404 and "999999" in rejected.json()["detail"]
    assert _count(app) == 200


def test_per_table_callback_key(client, app, register, hudi_tables, tokens):
    own = register("cow_v6_nonpartitioned", callback_key="table-own-key")
    other = register("cow_v8_nonpartitioned")
    key = {"HUDI-CALLBACK-KEY": "table-own-key"}
    ok = {"table_id": own["id"], "instant": "20240418173552000", "action": "commit"}
    assert client.post("/api/v1/events", json=ok, headers=key).status_code == 202
    # The key opens its own table only; unknown tables are not revealed to it.
    assert client.post("/api/v1/events", json={**ok, "table_id": other["id"]}, headers=key).status_code == 401
    assert client.post("/api/v1/events", json={**ok, "table_id": 999999}, headers=key).status_code == 401
    # Removing the key takes effect at once in this process.
    assert client.patch(f"/api/v1/tables/{own['id']}", json={"callback_key": None},
                        headers=tokens["admin"]).status_code == 200
    later = {**ok, "instant": "20240418173553000"}
    assert client.post("/api/v1/events", json=later, headers=key).status_code == 401


def test_writers_need_operator_tokens(client, register, tokens):
    table = register("cow_v6_nonpartitioned")
    event = {"table_id": table["id"], "instant": "20240418173552000", "action": "commit"}
    assert client.post("/api/v1/events", json=event, headers=tokens["viewer"]).status_code == 403
    assert client.post("/api/v1/events", json=event, headers=tokens["admin"]).status_code == 202
    assert client.post("/api/v1/events", json=event, headers={"Authorization": "Basic eDp5"}).status_code == 401


def test_validation_names_the_field(client, callback_headers):
    cases = [
        ({"instant": "20250101000000000", "action": "commit"}, "table_id and base_path"),
        ({"table_id": 1, "base_path": "/t", "instant": "20250101000000000", "action": "commit"}, "exactly one"),
        ({"table_id": 1, "instant": "2025", "action": "commit"}, "body.instant"),
        ({"table_id": 1, "instant": "20990000000000123", "action": "commit"}, "body.instant"),  # no month 00
        ({"table_id": 1, "instant": "20250101000000000", "action": "commit",
          "completion_time": "20230229000000000"}, "body.completion_time"),
        ({"table_id": 1, "instant": "20250101000000000", "action": "merge"}, "body.action"),
        ({"table_id": 1, "instant": "20250101000000000", "action": "commit", "state": "done"}, "body.state"),
        ({"table_id": 0, "instant": "20250101000000000", "action": "commit"}, "body.table_id"),
        ({"base_path": "t\x00", "instant": "20250101000000000", "action": "commit"}, "body.base_path"),
        ({"table_id": 1, "instant": "20250101000000000", "action": "commit",
          "write_stats": [{"p": "a\x00b"}]}, "body.write_stats"),
        ({"table_id": 1, "instant": "20250101000000000", "action": "commit",
          "extra_metadata": {"x": float("nan")}}, "body.extra_metadata"),
    ]
    headers = {**callback_headers, "Content-Type": "application/json"}
    for body, expected in cases:
        response = client.post("/api/v1/events", content=json.dumps(body), headers=headers)  # NaN allowed
        assert response.status_code == 422 and expected in response.json()["detail"], (body, response.text)
    empty = client.post("/api/v1/events:batch", json={"events": []}, headers=callback_headers)
    assert empty.status_code == 422 and "body.events" in empty.json()["detail"]


def test_oversized_body_is_413(client, register, callback_headers, settings):
    table = register("cow_v6_nonpartitioned")
    events = [{"table_id": table["id"], "instant": f"2024041817{i:07d}", "action": "commit",
               "write_stats": [{"path": "x" * 200}]} for i in range(2000)]
    response = client.post("/api/v1/events:batch", json={"events": events}, headers=callback_headers)
    assert response.status_code == 413


def _batch_cases(table_id):
    good = {"table_id": table_id, "instant": "20250101000000000", "action": "commit"}
    bad = [({"instant": "2025"}, "instant"), ({"instant": "2025010100000000٣"}, "instant"),
           ({"instant": "20990000000000123"}, "real date"), ({"instant": "20250230120000000"}, "real date"),
           ({"instant": "20250101246000000"}, "real date"), ({"completion_time": "20250229000000"}, "real date"),
           ({"action": "merge"}, "action"), ({"state": "done"}, "state"), ({"completion_time": "x"}, "completion_time"),
           ({"table_id": True}, "table_id"), ({"base_path": "/t"}, "exactly one"),
           ({"write_stats": [{"p": "a\x00b"}]}, "write_stats"), ({"write_stats": {"p": 1}}, "write_stats"),
           ({"extra_metadata": {"x": float("nan")}}, "extra_metadata"),
           ({"extra_metadata": {"x": "HUGE"}}, "extra_metadata")]
    for patch, expected in bad:
        events = [{**good, "instant": "20250101000000001"}, {**good, **patch}]
        yield json.dumps({"events": events}).replace('"HUGE"', "1e400"), expected  # 1e400: inf as Python reads it


def test_batch_refuses_what_single_events_refuse(client, app, register, callback_headers):
    table = register("cow_v6_nonpartitioned")
    headers = {**callback_headers, "Content-Type": "application/json"}
    for content, expected in _batch_cases(table["id"]):
        response = client.post("/api/v1/events:batch", content=content, headers=headers)
        assert response.status_code == 422 and expected in response.json()["detail"], (content, response.text)
        assert "body.events.1" in response.json()["detail"] or expected == "exactly one"
    assert _count(app) == 0


def test_batch_fast_path_reads_what_event_batch_reads():
    """The batch route's pydantic-core-only check gives EventBatch's values, and leaves all it would
    refuse (or cannot clear at once) to EventBatch."""
    good = [{"table_id": 7, "instant": "20250101000000000", "action": "deltacommit"},
            {"base_path": "/data/t/./", "instant": "20250101000000", "action": "clean", "state": "inflight",
             "completion_time": "20250101000001000", "write_stats": [{"fileId": "f", "n": [1, 2.5, None]}],
             "extra_metadata": {"schema": "{}"}, "future_field": 1}]
    body = json.dumps({"events": good}).encode()
    fast = checked_batch(body)
    assert fast is not None
    assert [e.model_dump() for e in fast] == [e.model_dump() for e in EventBatch.model_validate_json(body).events]
    assert fast[1].base_path == "/data/t"
    for content, _ in _batch_cases(7):
        assert checked_batch(content.encode()) is None, content
    assert checked_batch(b'{"events": []}') is None
