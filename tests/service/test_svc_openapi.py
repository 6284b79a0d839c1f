"""The OpenAPI document says what the service does (statuses, error bodies, validators), and the API docs
pages load everything from the service."""
from __future__ import annotations

import re
from http import HTTPStatus

from service.schemas.common import INSTANT_PATTERN


def _spec(client) -> dict:
    return client.get("/openapi.json").json()


def test_error_statuses_and_bodies_are_declared(client, tokens):
    paths = _spec(client)["paths"]
    rerun = paths["/api/v1/tasks/{task_id}:rerun"]["post"]["responses"]
    assert set(rerun) == {"200", "401", "403", "404", "409", "422", "503"}
    assert rerun["422"]["content"]["application/problem+json"]["schema"]["$ref"].endswith("/ValidationProblem")
    assert set(paths["/api/v1/queues"]["get"]["responses"]) == {"200", "401", "503"}
    assert set(paths["/api/v1/events"]["post"]["responses"]) == {"202", "400", "401", "403", "404", "413", "422",
                                                                 "503"}
    # The 422 body the service sends has the declared shape: a problem (RFC 9457) with errors per field.
    refused = client.get("/api/v1/tasks", params={"state": "DONE", "limit": 0}, headers=tokens["viewer"])
    assert refused.status_code == 422
    body = refused.json()
    assert refused.headers["content-type"] == "application/problem+json"
    assert (body["type"], body["title"], body["status"], body["instance"]) == (
        "about:blank", HTTPStatus(422).phrase, 422, "/api/v1/tasks")
    assert isinstance(body["detail"], str) and "query.state" in body["detail"] and "query.limit" in body["detail"]
    assert {tuple(e["loc"]) for e in body["errors"]} == {("query", "state"), ("query", "limit")}
    assert "HTTPValidationError" not in _spec(client)["components"]["schemas"]


def test_validators_are_in_the_schema(client, settings):
    schemas = _spec(client)["components"]["schemas"]
    event = schemas["EventIn"]["properties"]
    assert event["instant"]["pattern"] == INSTANT_PATTERN
    assert re.fullmatch(INSTANT_PATTERN, "20250101120000123") and not re.fullmatch(INSTANT_PATTERN, "2025010112")
    assert "deltacommit" in event["action"]["enum"] and "compaction" in event["action"]["enum"]
    base_path = schemas["TableRegistration"]["properties"]["base_path"]
    [root] = settings.storage_roots
    assert re.match(base_path["pattern"], f"{root}/trips") and not re.match(base_path["pattern"], "/elsewhere/t")
    assert root in base_path["description"]


def test_405_names_the_methods_of_the_path(client, tokens):
    answer = client.get("/api/v1/tasks/1:cancel", headers=tokens["viewer"])
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    answer = client.put("/api/v1/tables/1", headers=tokens["admin"])
    assert answer.status_code == 405 and answer.headers["allow"] == "DELETE, GET, PATCH"
    # /tables/1:plan would match /tables/{table_id} (which takes PATCH) with the id "1:plan": still a 405
    answer = client.patch("/api/v1/tables/1:plan", json={}, headers=tokens["admin"])
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    assert client.patch("/api/v1/tables/x", json={}, headers=tokens["admin"]).status_code == 422


def test_docs_pages_load_their_assets_from_the_service(client):
    for page, assets in [("/docs", ["swagger-ui-bundle.js", "swagger-ui.css"]), ("/redoc", ["redoc.standalone.js"])]:
        html = client.get(page)
        assert html.status_code == 200 and "default-src 'self'" in html.headers["content-security-policy"]
        sources = re.findall(r'(?:src|href)="([^"]+)"', html.text)
        assert sources and all(s.startswith("/") for s in sources), sources
        for asset in assets:
            assert f"/static/docs/{asset}" in sources
            served = client.get(f"/static/docs/{asset}")
            assert served.status_code == 200 and len(served.content) > 100_000


def test_the_document_is_as_strict_as_the_validation(client, tokens, register):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["PlanRequest"]["properties"]["service"]["enum"] == ["compaction", "clustering", "clean", "rollback",
                                                                      "archive"]
    assert not re.match(schemas["EventIn"]["properties"]["instant"]["pattern"], "00000101000000")  # no year 0
    table = register("cow_v6_nonpartitioned")
    # JSON Schema's integer: 7.0 is one, "7" and true are not
    changed = client.patch(f"/api/v1/tables/{table['id']}", json={"priority": 7.0}, headers=tokens["admin"])
    assert changed.status_code == 200 and changed.json()["priority"] == 7
    for bad in ("7", True, 7.5):
        assert client.patch(f"/api/v1/tables/{table['id']}", json={"priority": bad},
                            headers=tokens["admin"]).status_code == 422, bad
