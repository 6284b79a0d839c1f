"""What a request may cost: every body is bounded by its route (413 before it is parsed), a callback key that is
no table's is refused before the body is read, a base path is bounded and normalized in linear time, and the
fence checks of running jobs answer while the API is held busy (issue 35, item 2)."""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from support import served

from service import app as service_app
from service.body_limit import BULK_ROUTES
from service.schemas import common
from tms.db import Database, TaskRepo, TaskState, hash_secret
from tms.execute.fencing import http_fence
from tms.hudi.storage.paths import MAX_BASE_PATH_CHARS, InvalidBasePathError, normalize_base_path
from worker.fence import fence_url

CALLBACK = "/api/v1/hudi/callback"
THREADS = 40  # the worker threads a FastAPI app runs its plain (sync) routes in: anyio's default limiter


def _callback(base_path: str) -> dict:
    return {"commitTime": "20250713010600000", "tableName": "t", "basePath": base_path}


def _bounded_routes(client) -> list[tuple[str, str]]:
    """(method, path) of every API route that takes a body (path parameters filled in), and the dashboard's
    sign-in form."""
    paths = client.get("/openapi.json").json()["paths"]
    return sorted({(method.upper(), re.sub(r"\{[^}]+\}", "1", path)) for path, operations in paths.items()
                   for method in operations if method in ("post", "put", "patch")} | {("POST", "/ui/login")})


def test_every_route_refuses_a_body_above_its_bound_before_reading_it(client, settings):
    routes = _bounded_routes(client)
    assert ("POST", "/api/v1/events:batch") in routes and ("PUT", "/api/v1/queues/1") in routes
    bulk = {re.sub(r"\{[^}]+\}", "1", path) for path in BULK_ROUTES}
    for method, path in routes:
        bound, setting = ((settings.max_bulk_body_bytes, "TMS_MAX_BULK_BODY_BYTES") if path in bulk
                          else (settings.max_body_bytes, "TMS_MAX_BODY_BYTES"))
        # No credentials at all: the size is refused first, by the Content-Length, whatever the route.
        answer = client.request(method, path, content=b" " * (bound + 1),
                                headers={"Content-Type": "application/json"})
        assert answer.status_code == 413, (method, path, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["detail"] == f"the request body is larger than {bound} bytes ({setting})"
        # At the bound, the limit lets the body through to the route (which refuses it for other reasons).
        at_bound = client.request(method, path, content=b" " * bound, headers={"Content-Type": "application/json"})
        assert at_bound.status_code != 413, (method, path)


def test_a_chunked_body_is_refused_once_it_passes_the_bound(client, callback_headers, tokens, settings):
    chunk = b" " * 64 * 1024

    def body(bound: int) -> Iterator[bytes]:  # no Content-Length: sent chunked
        for _ in range(2 * bound // len(chunk)):
            yield chunk

    json = {"Content-Type": "application/json"}
    batch = client.post("/api/v1/events:batch", content=body(settings.max_bulk_body_bytes),
                        headers={**callback_headers, **json})
    assert batch.status_code == 413
    assert batch.json()["detail"] == (f"the request body is larger than {settings.max_bulk_body_bytes} bytes "
                                      "(TMS_MAX_BULK_BODY_BYTES)")
    queue = client.put("/api/v1/queues/q", content=body(settings.max_body_bytes), headers={**tokens["admin"], **json})
    assert queue.status_code == 413
    assert queue.json()["detail"] == (f"the request body is larger than {settings.max_body_bytes} bytes "
                                      "(TMS_MAX_BODY_BYTES)")


@pytest.fixture
def normalized(monkeypatch) -> list[str]:
    """The base paths the API's bodies normalize, as they are normalized."""
    calls: list[str] = []

    def spy(raw: str, **options) -> str:
        calls.append(raw)
        return normalize_base_path(raw, **options)

    monkeypatch.setattr(common, "normalize_base_path", spy)
    return calls


def test_a_callback_key_no_table_has_is_refused_before_the_body_is_read(client, register, hudi_tables, normalized):
    register("cow_v8_nonpartitioned", callback_key="the-tables-own-key")
    normalized.clear()  # the registration's
    guess = {"HUDI-CALLBACK-KEY": "a-guess"}
    huge = client.post(CALLBACK, json=_callback("/" + "a/" * 200_000), headers=guess)  # 400 KB
    assert huge.status_code == 401 and huge.json()["detail"] == "HUDI-CALLBACK-KEY does not match"
    # Not even read: a body that is not JSON gets the same 401, not a 400.
    not_json = client.post(CALLBACK, content=b"{not json", headers={**guess, "Content-Type": "application/json"})
    assert not_json.status_code == 401
    for path in ("/api/v1/events", "/api/v1/events:batch"):
        assert client.post(path, content=b"{not json", headers=guess).status_code == 401
    assert normalized == []
    # The table's own key gets its body read; the path is refused by its length, before it is normalized.
    own = client.post(CALLBACK, json=_callback("/" + "a/" * 200_000),
                      headers={"HUDI-CALLBACK-KEY": "the-tables-own-key"})
    assert own.status_code == 422
    assert own.json()["detail"] == f"body.basePath: String should have at most {MAX_BASE_PATH_CHARS} characters"
    assert normalized == []


def test_a_base_path_is_bounded_and_resolved_as_realpath_resolves_it(tmp_path):
    with pytest.raises(InvalidBasePathError, match=f"at most {MAX_BASE_PATH_CHARS} characters"):
        normalize_base_path("/" + "a" * MAX_BASE_PATH_CHARS)
    (tmp_path / "real" / "t").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    real = str((tmp_path / "real").resolve())
    assert normalize_base_path(f"{tmp_path}/link/t/") == f"{real}/t"
    assert normalize_base_path(f"file://{tmp_path}/link/./x/../t/missing/more") == f"{real}/t/missing/more"
    assert normalize_base_path(f"{tmp_path}/dangling/t") == f"{(tmp_path / 'gone').resolve()}/t"
    assert normalize_base_path("/") == "/"
    longest = "/" + "a/" * (MAX_BASE_PATH_CHARS // 2 - 1)  # 4094 characters of folders that do not exist
    assert normalize_base_path(longest) == longest.rstrip("/")


@pytest.fixture(scope="module")
def service(settings) -> Iterator[str]:
    """A second app of the test settings, served by uvicorn on loopback (the session app runs in the test
    client)."""
    database = Database(settings.database_url)
    with served(service_app.create_app(settings, database)) as url:
        yield url
    database.dispose()


# The check is "answered within 2 s, /healthz within 1 s meanwhile"; as timeouts (never measured), and
# generous ones for a loaded test machine: before, a 400 KB path held the service for minutes.
ANSWERED_WITHIN = 20.0
HEALTHZ_WITHIN = 10.0


def test_an_unauthenticated_huge_callback_is_answered_while_healthz_answers(client, service, settings):
    answers: list[int] = []
    bodies = [_callback("/" + "a/" * 200_000), _callback("/" + "a/" * (settings.max_bulk_body_bytes // 2))]

    def send(body: dict) -> None:
        with httpx.Client(base_url=service, timeout=ANSWERED_WITHIN) as http:
            answers.append(http.post(CALLBACK, json=body, headers={"HUDI-CALLBACK-KEY": "any"}).status_code)

    senders = [threading.Thread(target=send, args=(body,)) for body in bodies for _ in range(4)]
    for sender in senders:
        sender.start()
    with httpx.Client(base_url=service, timeout=HEALTHZ_WITHIN) as http:
        while any(sender.is_alive() for sender in senders):
            assert http.get("/healthz").status_code == 200
    for sender in senders:
        sender.join()
    assert sorted(answers) == [401] * 4 + [413] * 4


def _running_task(register, database, lease_seconds: float) -> tuple[int, int, str]:
    """A running task's (id, fencing token, fence key), as a worker's claim leaves it."""
    table = register("cow_v8_nonpartitioned")
    key = "the-attempts-fence-key"
    with database.transaction() as session:
        tasks = TaskRepo(session)
        task, _ = tasks.create(table_id=table["id"], service="clean", instant="20250713010600000",
                               state=TaskState.RUNNABLE)
        claimed = tasks.claim(task.id, expected_version=task.version, owner="w1", lease_seconds=lease_seconds,
                              fence_key_hash=hash_secret(key))
        assert claimed is not None
        return claimed.id, claimed.fencing_token, key


def test_fence_checks_and_lease_renewals_go_on_while_the_api_is_held_busy(app, client, register, tokens, service,
                                                                         settings, monkeypatch):
    task_id, token, key = _running_task(register, app.state.database, lease_seconds=30)
    # Requests that each hold a worker thread (and a database connection) until released, more of them than the
    # service has worker threads: listing tasks made slow.
    release = threading.Event()
    held = threading.Semaphore(0)
    slow_find = TaskRepo.find

    def find(self, **filters):
        held.release()
        release.wait(timeout=30)
        return slow_find(self, **filters)

    monkeypatch.setattr(TaskRepo, "find", find)
    viewer = tokens["viewer"]
    busy = ThreadPoolExecutor(max_workers=80)
    try:
        slow = [busy.submit(httpx.get, f"{service}/api/v1/tasks", headers=viewer, timeout=60) for _ in range(60)]
        huge = [busy.submit(httpx.post, f"{service}{CALLBACK}", json=_callback("/" + "a/" * 200_000),
                            headers={"HUDI-CALLBACK-KEY": "any"}, timeout=60) for _ in range(10)]
        for _ in range(THREADS):  # every worker thread of the service is held
            assert held.acquire(timeout=30)
        # Before, the fence check waited for a worker thread, behind the held requests, until released.
        fence = http_fence(fence_url(service, task_id, token, key), timeout=HEALTHZ_WITHIN, patience=0)
        for _ in range(5):
            answer = httpx.get(fence_url(service, task_id, token, key), timeout=HEALTHZ_WITHIN)
            assert answer.status_code == 200 and answer.json()["holds"] is True
            fence()  # the job's own check: no retry allowed, answered at once
            with app.state.database.transaction() as session:  # the worker renews the lease meanwhile
                assert TaskRepo(session).renew_lease(task_id, fencing_token=token, lease_seconds=30)
            time.sleep(0.1)
        assert not any(f.done() for f in slow), "the API was not held busy all along"
    finally:
        release.set()
        busy.shutdown(wait=True)
    assert [f.result().status_code for f in slow] == [200] * 60
    assert [f.result().status_code for f in huge] == [401] * 10
