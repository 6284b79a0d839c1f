"""Real service processes: two uvicorn processes against one database lose no event, and
`tms serve` on a fresh data directory starts its own embedded PostgreSQL."""
from __future__ import annotations

import threading

import httpx

from tms.db import EventRepo

UVICORN = ["-m", "uvicorn", "--factory", "service.app:create_app", "--no-access-log"]


def test_two_processes_accept_concurrent_events_for_one_table(start_service, register, app, settings):
    table = register("mor_v6_trips_8i1u")
    admin_token, callback_key = settings.admin_token.get_secret_value(), settings.callback_key.get_secret_value()
    env = {"TMS_DATABASE_URL": settings.database_url, "TMS_CALLBACK_KEY": callback_key,
           "TMS_ADMIN_TOKEN": admin_token}
    urls = [start_service(UVICORN, env), start_service(UVICORN, env)]
    headers = {"HUDI-CALLBACK-KEY": callback_key}
    events = [{"table_id": table["id"], "instant": f"20250331{i:09d}", "action": "deltacommit"} for i in range(300)]
    batches = [events[i:i + 25] for i in range(0, 300, 25)]
    outcomes: list[tuple[int, int]] = []  # (status, stored)
    barrier = threading.Barrier(8)

    def client(n):
        barrier.wait()
        with httpx.Client(timeout=30) as http:
            order = events if n % 2 else events[::-1]
            for i, event in enumerate(order[n * 30:(n + 1) * 30] + order[:10]):  # overlaps: duplicates
                response = http.post(urls[(n + i) % 2] + "/api/v1/events", json=event, headers=headers)
                outcomes.append((response.status_code, response.json()["stored"]))
            for i, batch in enumerate(batches[n::4]):
                response = http.post(urls[(n + i + 1) % 2] + "/api/v1/events:batch", json={"events": batch},
                                     headers=headers)
                outcomes.append((response.status_code, response.json()["stored"]))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {status for status, _ in outcomes} == {202}
    assert sum(stored for _, stored in outcomes) == 300  # each event stored by exactly one request
    with app.state.database.transaction() as session:
        assert sorted(e.instant for e in EventRepo(session).unprocessed(table["id"], limit=1000)) == sorted(
            e["instant"] for e in events)
    with httpx.Client() as http:  # both processes registered themselves
        instances = http.get(urls[0] + "/api/v1/instances",
                             headers={"Authorization": f"Bearer {settings.admin_token.get_secret_value()}"}).json()
    assert len({i["pid"] for i in instances}) >= 2


def test_serve_starts_an_embedded_database_on_first_run(start_service, tmp_path):
    env = {"TMS_DATA_DIR": str(tmp_path / "data"), "TMS_ADMIN_TOKEN": "a" * 20}
    url = start_service(["-m", "tms.cli", "serve", "--host", "127.0.0.1"], env, timeout=120)
    response = httpx.get(url + "/api/v1/tables", headers={"Authorization": "Bearer " + "a" * 20})
    assert response.status_code == 200 and response.json()["total"] == 0
    assert (tmp_path / "data" / "postgres" / "PG_VERSION").exists()
