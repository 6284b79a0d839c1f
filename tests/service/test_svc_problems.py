"""Every error body of the API has one shape, RFC 9457's problem details (`application/problem+json`: type,
title, status, detail, instance), with the status OpenAPI declares: a body that is not JSON (malformed, or of
another content type) is a 400 with the same message on every route; no message names an internal model; a
path that does not exist and a folder that is not a Hudi table are told apart."""
from __future__ import annotations

import pytest

from service.errors import NOT_JSON

# Every route that takes a JSON body: (method, path, the token's role or the writer's callback key).
BODY_ROUTES = [("post", "/api/v1/tables", "admin"), ("patch", "/api/v1/tables/1", "admin"),
               ("put", "/api/v1/queues/q", "admin"), ("post", "/api/v1/tokens", "admin"),
               ("post", "/api/v1/events", "writer"), ("post", "/api/v1/events:batch", "writer"),
               ("post", "/api/v1/hudi/callback", "writer")]


def _headers(tokens, callback_headers, who: str, content_type: str) -> dict[str, str]:
    return {**(callback_headers if who == "writer" else tokens[who]), "Content-Type": content_type}


def assert_problem(answer, status: int) -> dict:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert {k: body[k] for k in ("type", "title", "status")} == {
        "type": "about:blank", "title": __import__("http").HTTPStatus(status).phrase, "status": status}
    path = answer.request.url.path
    assert body["instance"] == path if len(path) <= 200 else body["instance"] == path[:200] + "…"
    assert isinstance(body["detail"], str) and "\n" not in body["detail"] and body["detail"]
    return body


@pytest.mark.parametrize(("method", "path", "who"), BODY_ROUTES)
def test_a_body_that_is_not_json_is_a_400_with_one_message_on_every_route(client, tokens, callback_headers,
                                                                          method, path, who):
    malformed = client.request(method, path, content=b"{bad", headers=_headers(tokens, callback_headers, who,
                                                                               "application/json"))
    assert assert_problem(malformed, 400)["detail"] == NOT_JSON
    text = client.request(method, path, content=b"hello", headers=_headers(tokens, callback_headers, who,
                                                                           "text/plain"))
    assert assert_problem(text, 400)["detail"] == \
        "the request body must be JSON (Content-Type: application/json), not text/plain"


@pytest.mark.parametrize(("method", "path", "who"), BODY_ROUTES)
def test_json_that_is_not_an_object_names_no_internal_model(client, tokens, callback_headers, method, path, who):
    answer = client.request(method, path, content=b"[1]", headers=_headers(tokens, callback_headers, who,
                                                                           "application/json"))
    body = assert_problem(answer, 422)
    assert body["detail"] == "body: must be a JSON object", body
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert not any(name in body["detail"] for name in schemas), body


def test_every_kind_of_refusal_has_the_problem_shape(client, tokens):
    assert assert_problem(client.get("/api/v1/tables"), 401)
    assert assert_problem(client.post("/api/v1/tokens", json={"role": "viewer"}, headers=tokens["viewer"]), 403)
    assert assert_problem(client.get("/api/v1/tables/424242", headers=tokens["viewer"]), 404)["detail"] == \
        "no table with id 424242"
    assert assert_problem(client.put("/api/v1/tables/1", headers=tokens["admin"]), 405)
    validation = assert_problem(client.get("/api/v1/tasks", params={"limit": 0}, headers=tokens["viewer"]), 422)
    assert [tuple(e["loc"]) for e in validation["errors"]] == [("query", "limit")]


def test_declared_error_bodies_are_problem_json(client):
    paths = client.get("/openapi.json").json()["paths"]
    declared = [(path, method, code, response) for path, operations in paths.items()
                for method, operation in operations.items() for code, response in operation["responses"].items()
                if code[0] in "45" and "content" in response]
    assert declared
    for path, method, code, response in declared:
        assert set(response["content"]) == {"application/problem+json"}, (path, method, code)
    register = paths["/api/v1/tables"]["post"]["responses"]
    assert register["400"]["content"]["application/problem+json"]["schema"]["$ref"].endswith("/Problem")


def test_a_missing_path_and_a_folder_that_is_not_a_table_are_told_apart(client, tokens, settings):
    [root] = settings.storage_roots
    missing = client.post("/api/v1/tables", json={"base_path": f"{root}/no-such-table"}, headers=tokens["admin"])
    assert assert_problem(missing, 422)["detail"] == f"body.base_path: {root}/no-such-table does not exist"
    not_a_table = client.post("/api/v1/tables", json={"base_path": root}, headers=tokens["admin"])
    assert assert_problem(not_a_table, 422)["detail"] == \
        f"body.base_path: {root} is not a Hudi table: it has no .hoodie/hoodie.properties"


def test_an_oversized_body_is_a_413_of_the_declared_media_type(client, callback_headers, settings):
    big = b'{"events": [' + b'{"x": "' + b"y" * settings.max_bulk_body_bytes + b'"}]}'
    answer = client.post("/api/v1/events:batch", content=big,
                         headers={**callback_headers, "Content-Type": "application/json"})
    assert answer.status_code == 413
    declared = client.get("/openapi.json").json()["paths"]["/api/v1/events:batch"]["post"]["responses"]["413"]
    assert answer.headers["content-type"].partition(";")[0] in declared["content"], answer.headers


def test_echoed_input_is_bounded_and_escaped(client, tokens):
    # A long path and ANSI escapes, echoed by the refusal: bounded with "…", control characters as \x1b.
    long = "/" + "a" * 4_000  # within the longest base path accepted (4,096 characters)
    refused = client.post("/api/v1/tables", json={"base_path": long}, headers=tokens["admin"])
    body = assert_problem(refused, 422)
    assert len(refused.content) < 10_000 and "/" + "a" * 199 + "…" in body["detail"]
    assert "a" * 201 not in refused.text
    red = client.post("/api/v1/tables", json={"base_path": "/\x1b[31mred\x1b[0m"}, headers=tokens["admin"])
    body = assert_problem(red, 422)
    assert "\x1b" not in red.text and "\\x1b[31mred\\x1b[0m" in body["detail"]
    path = assert_problem(client.get("/api/v1/" + "b" * 5000, headers=tokens["viewer"]), 404)
    assert path["instance"] == "/api/v1/" + "b" * 192 + "…"
