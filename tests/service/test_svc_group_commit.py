"""Single events sent concurrently to a real service process are written in groups (tms.db.intake), yet
each answer keeps its meaning: a 202 is a commit, a request whose event the database refuses fails alone,
and a writer retrying after a crash stores nothing twice."""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from support import TIMEOUT_SCALE

from tms.db import EventRepo, TableRepo
from tms.db.engine import libpq_url

REPO = Path(__file__).resolve().parents[2]
CONCURRENCY = 48


@pytest.fixture
def serve(settings, tmp_path) -> Iterator:
    """serve() -> (base URL, process) of `uvicorn service.app` on the tests' database; killed at the end."""
    processes: list[subprocess.Popen] = []

    def _serve() -> tuple[str, subprocess.Popen]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
        env.update(TMS_DATABASE_URL=settings.database_url, TMS_CALLBACK_KEY=settings.callback_key.get_secret_value(),
                   TMS_HEARTBEAT_SECONDS="3600", TMS_LOG_LEVEL="WARNING")
        log = open(tmp_path / f"service-{port}.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "service.app:create_app",
                                 "--port", str(port), "--no-access-log"], cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        processes.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60 * TIMEOUT_SCALE
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    return url, proc
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"service {'exited' if proc.poll() is not None else 'not ready'}: "
                             + (tmp_path / f"service-{port}.log").read_text())

    yield _serve
    for proc in processes:
        proc.kill()
        proc.wait()


def _event(table_id: int, i: int) -> dict:
    return {"table_id": table_id, "instant": f"2025010100{i:07d}", "action": "deltacommit",
            "write_stats": [{"fileId": f"f-{i}", "numWrites": i}]}


async def _post_all(url: str, headers: dict, events: list[dict], *, after: int | None = None, then=None,
                    committed: str | None = None) -> dict[str, int | None]:
    """POST each event on its own from CONCURRENCY connections: {instant: status, None if unanswered}.
    `then()` runs once `after` answers have come (the rest may still be in flight). With `committed` (a
    database URL), each acknowledged event must already be visible to another session when its 202 arrives."""
    answers: dict[str, int | None] = {}
    pending = iter(events)
    reader = await psycopg.AsyncConnection.connect(libpq_url(committed), autocommit=True) if committed else None
    reading = asyncio.Lock()

    async def sender(client: httpx.AsyncClient) -> None:
        for event in pending:
            try:
                response = await client.post("/api/v1/events", json=event, headers=headers)
                answers[event["instant"]] = response.status_code
            except httpx.TransportError:
                answers[event["instant"]] = None
                continue
            if then is not None and len(answers) == after:
                then()
            if reader is not None and response.status_code == 202:
                async with reading:
                    cursor = await reader.execute("SELECT count(*) FROM events WHERE table_id = %s AND instant = %s",
                                                  (event["table_id"], event["instant"]))
                    assert await cursor.fetchone() == (1,), f"{event['instant']} acknowledged, not committed"

    limits = httpx.Limits(max_connections=CONCURRENCY)
    try:
        # A generous timeout: on a loaded machine (CI runs four pytests on 2 cores) a group commit took over 30 s,
        # and an unanswered request is what the kill test counts as such.
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
            await asyncio.gather(*(sender(client) for _ in range(CONCURRENCY)))
    finally:
        if reader is not None:
            await reader.close()
    return answers


def _stored(app, table_id: int) -> list[str]:
    with app.state.database.transaction() as session:
        return [e.instant for e in EventRepo(session).unprocessed(table_id, limit=100_000)]


def test_every_acknowledged_event_survives_a_kill_and_a_retry_stores_nothing_twice(
        client, app, register, serve, callback_headers):
    table = register("mor_v6_nonpartitioned_rollback")
    events = [_event(table["id"], i) for i in range(240)]
    url, proc = serve()
    # kill -9 while requests are still in flight: nothing the service acknowledged may be missing.
    answers = asyncio.run(_post_all(url, callback_headers, events, after=120, committed=app.state.database.url,
                                    then=lambda: proc.send_signal(signal.SIGKILL)))
    acknowledged = {instant for instant, code in answers.items() if code == 202}
    assert len(acknowledged) >= 120 and set(answers.values()) <= {202, None}, set(answers.values())
    stored = _stored(app, table["id"])
    assert acknowledged <= set(stored) and len(stored) == len(set(stored))

    # The writer resends everything (here to the app in this process): each event is stored once.
    retried = [client.post("/api/v1/events", json=e, headers=callback_headers).json() for e in events]
    assert sum(r["stored"] for r in retried) == len(events) - len(stored)
    assert sorted(_stored(app, table["id"])) == sorted(e["instant"] for e in events)


def test_an_event_the_database_refuses_fails_alone_in_its_group(app, register, serve, callback_headers):
    kept = register("mor_v6_nonpartitioned_rollback")
    doomed = register("cow_v6_nonpartitioned")
    url, _ = serve()
    # The service learns both tables (its identity cache), then one is removed behind its back: its event
    # reaches the INSERT of a group and the database refuses it (foreign key).
    warm = asyncio.run(_post_all(url, callback_headers, [_event(kept["id"], 0), _event(doomed["id"], 0)]))
    assert set(warm.values()) == {202}
    with app.state.database.transaction() as session:
        TableRepo(session).unregister(doomed["id"])
    good = [_event(kept["id"], i) for i in range(1, 120)]
    bad = {**_event(doomed["id"], 1), "instant": "20250102000000000"}
    answers = asyncio.run(_post_all(url, callback_headers, [*good[:60], bad, *good[60:]]))
    assert answers.pop(bad["instant"]) == 404
    assert set(answers.values()) == {202}
    assert sorted(_stored(app, kept["id"])) == sorted(e["instant"] for e in [_event(kept["id"], 0), *good])
