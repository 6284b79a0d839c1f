"""Every endpoint's authentication and role checks: 401 without or with a bad credential, 403 for a
role too weak, and the role hierarchy viewer < operator < admin."""
from __future__ import annotations

import re

import pytest

# (method, path, minimum role); bodies are irrelevant: auth is checked before anything else matters.
ENDPOINTS = [
    ("GET", "/api/v1/tables", "viewer"),
    ("GET", "/api/v1/tables/1", "viewer"),
    ("POST", "/api/v1/tables", "admin"),
    ("PATCH", "/api/v1/tables/1", "admin"),
    ("DELETE", "/api/v1/tables/1", "admin"),
    ("POST", "/api/v1/tables/1:plan", "operator"),
    ("GET", "/api/v1/tables/1/savepoints", "viewer"),
    ("POST", "/api/v1/tables/1/savepoints", "operator"),
    ("DELETE", "/api/v1/tables/1/savepoints/1", "operator"),
    ("POST", "/api/v1/tables/1/backfills", "operator"),
    ("DELETE", "/api/v1/tables/1/backfills/1", "operator"),
    ("POST", "/api/v1/tables/1/restore", "admin"),
    ("GET", "/api/v1/tables/1/backup", "viewer"),
    ("PUT", "/api/v1/tables/1/backup", "admin"),
    ("GET", "/api/v1/tables/1/backups", "viewer"),
    ("POST", "/api/v1/tables/1/backups", "operator"),
    ("GET", "/api/v1/tables/1/indexes", "viewer"),
    ("POST", "/api/v1/tables/1/indexes", "admin"),
    ("DELETE", "/api/v1/tables/1/indexes/1", "admin"),
    ("GET", "/api/v1/tasks", "viewer"),
    ("GET", "/api/v1/tasks/1", "viewer"),
    ("POST", "/api/v1/tasks/1:rerun", "operator"),
    ("POST", "/api/v1/tasks/1:suspend", "operator"),
    ("POST", "/api/v1/tasks/1:resume", "operator"),
    ("POST", "/api/v1/tasks/1:cancel", "operator"),
    ("GET", "/api/v1/queues", "viewer"),
    ("PUT", "/api/v1/queues/1", "admin"),
    ("DELETE", "/api/v1/queues/1", "admin"),
    ("GET", "/api/v1/engines", "viewer"),
    ("GET", "/api/v1/engines/1", "viewer"),
    ("PUT", "/api/v1/engines/1", "admin"),
    ("DELETE", "/api/v1/engines/1", "admin"),
    ("GET", "/api/v1/rollouts", "viewer"),
    ("GET", "/api/v1/rollouts/1", "viewer"),
    ("GET", "/api/v1/rollouts/1/shadow-runs", "viewer"),
    ("PUT", "/api/v1/rollouts/1", "admin"),
    ("DELETE", "/api/v1/rollouts/1", "admin"),
    ("POST", "/api/v1/tokens", "admin"),
    ("GET", "/api/v1/tokens", "admin"),
    ("DELETE", "/api/v1/tokens/1", "admin"),
    ("GET", "/api/v1/instances", "viewer"),
    ("GET", "/api/v1/alerts", "viewer"),
    ("POST", "/api/v1/alerts/1:acknowledge", "operator"),
    ("GET", "/api/v1/manager", "viewer"),
    ("POST", "/api/v1/mutes", "admin"),
    ("GET", "/api/v1/mutes", "viewer"),
    ("DELETE", "/api/v1/mutes/1", "admin"),
    ("POST", "/api/v1/webhooks", "admin"),
    ("GET", "/api/v1/webhooks", "admin"),
    ("PATCH", "/api/v1/webhooks/1", "admin"),
    ("DELETE", "/api/v1/webhooks/1", "admin"),
    ("GET", "/api/v1/webhooks/1/deliveries", "admin"),
    ("POST", "/api/v1/discovery/scan", "admin"),
    ("GET", "/api/v1/discovery/tables", "viewer"),
    ("POST", "/api/v1/discovery/glue-sync", "admin"),
    ("POST", "/api/v1/discovery/hive-sync", "admin"),
    ("GET", "/api/v1/policy-templates", "viewer"),
    ("GET", "/api/v1/policy-templates/1", "viewer"),
    ("PUT", "/api/v1/policy-templates/1", "admin"),
    ("DELETE", "/api/v1/policy-templates/1", "admin"),
    ("GET", "/api/v1/fleet/health", "viewer"),
    ("GET", "/api/v1/fleet/backlog", "viewer"),
    ("GET", "/api/v1/tables/1/health/history", "viewer"),
    ("POST", "/api/v1/fleet/health:score", "operator"),
    ("GET", "/api/v1/tables/1/orphans", "viewer"),
    ("POST", "/api/v1/tables/1/orphans:remove", "admin"),
    # Event senders: operator tokens (or the callback key, tested with the events).
    ("POST", "/api/v1/events", "operator"),
    ("POST", "/api/v1/events:batch", "operator"),
    ("POST", "/api/v1/hudi/callback", "operator"),
]
RANK = {"viewer": 1, "operator": 2, "admin": 3}
# Routes authenticated by their own secret instead of a role: a job's fence check shows its attempt's key.
OWN_SECRET = [("GET", "/api/v1/tasks/1/fence")]


def test_every_api_route_is_listed(app):
    """So a new route cannot skip these checks unnoticed."""
    routes = {(method.upper(), re.sub(r"\{\w+\}", "1", path)) for path, operations in app.openapi()["paths"].items()
              if path.startswith("/api/") for method in operations}
    assert routes == {(method, path) for method, path, _ in ENDPOINTS} | set(OWN_SECRET)


def test_the_fence_takes_the_attempts_key_and_no_token_replaces_it(client, tokens):
    assert client.get("/api/v1/tasks/1/fence").status_code == 422
    for headers in ({}, tokens["admin"]):
        response = client.get("/api/v1/tasks/1/fence", params={"token": 1, "key": "guess"}, headers=headers)
        assert response.status_code == 403, response.text


@pytest.mark.parametrize("method, path, minimum", ENDPOINTS)
def test_missing_and_bad_credentials_are_401(client, method, path, minimum):
    assert client.request(method, path).status_code == 401
    bad = client.request(method, path, headers={"Authorization": "Bearer not-a-token"})
    assert bad.status_code == 401 and bad.headers["www-authenticate"] == "Bearer"
    assert client.request(method, path, headers={"Authorization": "Token abc"}).status_code == 401


@pytest.mark.parametrize("method, path, minimum", ENDPOINTS)
def test_roles(client, tokens, method, path, minimum):
    for role in ("viewer", "operator", "admin", "env_admin"):
        status = client.request(method, path, headers=tokens[role]).status_code
        if RANK[role.removeprefix("env_")] < RANK[minimum]:
            assert status == 403, (role, status)
        else:
            assert status not in (401, 403), (role, status)


@pytest.mark.parametrize("method, path, minimum", [e for e in ENDPOINTS if e[0] != "GET"])
def test_credentials_are_checked_before_the_body_is_read(client, tokens, method, path, minimum):
    """A caller who may not make the request gets its 401 or 403, not the 400 of a body that is not JSON."""
    not_json = {"content": b'{"not json', "headers": {"Content-Type": "application/json"}}
    response = client.request(method, path, **not_json)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer", response.text
    if minimum != "viewer":
        weaker = "viewer" if minimum == "operator" else "operator"
        headers = {**not_json["headers"], **tokens[weaker]}
        response = client.request(method, path, content=not_json["content"], headers=headers)
        assert response.status_code == 403, response.text
        assert response.json()["detail"].endswith(f"the token has the {weaker} role")


def test_revoked_token_is_refused(client, tokens):
    created = client.post("/api/v1/tokens", json={"role": "viewer", "name": "temp"}, headers=tokens["admin"]).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    listed = client.get("/api/v1/tokens", headers=tokens["admin"]).json()
    assert created["id"] in [t["id"] for t in listed] and all("token" not in t for t in listed)
    assert client.delete(f"/api/v1/tokens/{created['id']}", headers=tokens["admin"]).status_code == 204
    assert client.get("/api/v1/tables", headers=headers).status_code == 401


def test_open_endpoints(client):
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"):
        assert client.get(path).status_code == 200, path
