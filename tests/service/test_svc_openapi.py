"""The OpenAPI document says what the service does (statuses, error bodies, validators), and the API docs
pages load everything from the service."""
from __future__ import annotations

import re
from http import HTTPStatus

import pytest
from jsonschema import Draft202012Validator

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
    patterns = [base_path["pattern"], *(condition["pattern"] for condition in base_path["allOf"])]
    assert all(re.match(p, f"{root}/trips") for p in patterns)
    assert not all(re.match(p, "/elsewhere/t") for p in patterns)
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


SAVEPOINT = "20250101120000000"
# (route, model, body): requests whose verdict needs more than one field's schema. A restore's or a backup
# policy's table does not exist, so a body the service accepts is answered 404; a PATCH changes a real table.
CROSS_FIELD = [
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"savepoint": SAVEPOINT, "in_place": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"version": 2, "target_path": "{root}/copy"}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"version": 2, "target_path": "{root}/copy", "catch_up": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"version": 2, "savepoint": SAVEPOINT, "in_place": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"savepoint": SAVEPOINT}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"version": 2, "in_place": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"savepoint": SAVEPOINT, "target_path": "{root}/copy",
                                                         "in_place": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"savepoint": SAVEPOINT, "target_path": "{root}/copy",
                                                         "catch_up": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"savepoint": "20250230120000000", "in_place": True}),
    ("/api/v1/tables/999999/restore", "RestoreRequest", {"version": 2, "target_path": "/elsewhere/copy"}),
    ("/api/v1/tables/999999", "TableChanges", {"policies": {"hoodie.cleaner.commits.retained": 3}}),
    ("/api/v1/tables/999999", "TableChanges", {"policies": {"hoodie.cleaner.commits.retained": None}}),
    ("/api/v1/tables/999999", "TableChanges", {"policies": {"hoodie.cleaner.commits.retained": 0}}),
    ("/api/v1/tables/999999", "TableChanges", {"policies": {"hoodie.cleaner.commits.retaind": 3}}),
    ("/api/v1/tables/999999", "TableChanges", {"policies": {"hoodie.compaction.strategy": "UnBoundedCompaction"
                                                                                          "Strategy"}}),
    ("/api/v1/tables/999999", "TableChanges", {"policies": {"tms.backup.destination": "/elsewhere/backups"}}),
    ("/api/v1/tables/999999", "TableChanges", {"owner": "a\u0000b"}),
    ("/api/v1/tables/999999", "TableChanges", {"enabled": None}),
    ("/api/v1/tables/999999/backup", "BackupPolicyIn", {"destination": "{root}/b", "schedule": "30 2 * * mon-fri"}),
    ("/api/v1/tables/999999/backup", "BackupPolicyIn", {"destination": "{root}/b", "schedule": "30  2 * * *"}),
    ("/api/v1/tables/999999/backup", "BackupPolicyIn", {"destination": "/elsewhere/b"}),
]


@pytest.mark.parametrize("path, model, body", CROSS_FIELD)
def test_the_document_and_the_service_agree_on_cross_field_rules(client, tokens, settings, register, path, model,
                                                                 body):
    spec = _spec(client)
    accepted = 404
    if model == "TableChanges":
        path, accepted = f"/api/v1/tables/{register('cow_v6_nonpartitioned')['id']}", 200
    [root] = settings.storage_roots
    body = {k: v.format(root=root) if isinstance(v, str) else v for k, v in body.items()}
    valid = Draft202012Validator({"$ref": f"#/components/schemas/{model}", "components": spec["components"]}
                                 ).is_valid(body)
    method = {"RestoreRequest": "POST", "TableChanges": "PATCH", "BackupPolicyIn": "PUT"}[model]
    response = client.request(method, path, json=body, headers=tokens["admin"])
    assert response.status_code == (accepted if valid else 422), (valid, response.text)
