"""A table on S3 (the moto server on loopback) serviced by long-lived processes: the service and the planner
see every commit a writer in another process makes, however long they have kept the table loaded."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from support import REPO
from table_model import ModelledTable, rec

from tms.db import EventRepo, TaskRepo

UVICORN = ["-m", "uvicorn", "--factory", "service.app:create_app", "--no-access-log"]
EVERY_3 = {"hoodie.compact.inline.max.delta.commits": 3}


def _wait(what: str, check, timeout: float = 60.0, logs=()):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n" + "\n".join(p.read_text() for p in logs))
        time.sleep(0.2)


@pytest.mark.slow  # ~80 s: a writer, the service and the planner on one S3 endpoint
def test_service_and_planner_see_new_commits_on_s3_and_plan_the_compaction(
        s3_base, client, app, settings, start_service, tmp_path):
    root = s3_base.rsplit("/", 1)[0]
    t = ModelledTable(f"{s3_base}/trips", version=8)
    admin, callback_key = settings.admin_token.get_secret_value(), settings.callback_key.get_secret_value()
    env = {"TMS_DATABASE_URL": settings.database_url, "TMS_ADMIN_TOKEN": admin, "TMS_CALLBACK_KEY": callback_key,
           "TMS_STORAGE_ROOTS": root, "TMS_PLANNER_POLL_SECONDS": "0.2", "TMS_PLANNER_SCAN_SECONDS": "3600"}
    url = start_service(UVICORN, env)
    planner_log = tmp_path / "planner.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    with open(planner_log, "w") as log:
        planner = subprocess.Popen([sys.executable, "-m", "tms.cli", "planner"], cwd=REPO, stdout=log,
                                   stderr=subprocess.STDOUT, env={**clean, "TMS_HEARTBEAT_SECONDS": "1", **env})
    database = app.state.database
    http = httpx.Client(base_url=url, timeout=30)
    try:
        registered = http.post("/api/v1/tables", json={"base_path": t.path, "policies": EVERY_3},
                               headers={"Authorization": f"Bearer {admin}"})
        assert registered.status_code == 201, registered.text
        table_id = registered.json()["id"]

        def commit(records, op="upsert") -> str:
            instant = t.write(records, op)
            response = http.post("/api/v1/events", headers={"HUDI-CALLBACK-KEY": callback_key},
                                 json={"table_id": table_id, "instant": instant, "action": "deltacommit"})
            assert response.status_code == 202, response.text
            return instant

        def handled() -> bool:
            with database.transaction() as session:
                return not EventRepo(session).unprocessed(table_id)

        def view() -> dict:
            response = http.get(f"/api/v1/tables/{table_id}", headers={"Authorization": f"Bearer {admin}"})
            assert response.status_code == 200, response.text
            return response.json()["timeline"]

        first = commit([rec(i, 10) for i in range(6)], "insert")
        _wait("the planner to handle the first commit", handled, logs=[planner_log])
        assert view()["last_completed"]["instant"] == first  # both processes have now listed the timeline

        last = [commit([rec(i, ts) for i in range(3)]) for ts in (20, 30, 40)][-1]

        def compaction_tasks():
            with database.transaction() as session:
                return [x for x in TaskRepo(session).find(table_id=table_id, limit=100)[0]
                        if x.service == "compaction"]

        [task] = _wait("the planner to plan the compaction", compaction_tasks, timeout=30, logs=[planner_log])
        timeline = t.table().timeline
        assert [i.timestamp for i in timeline.pending(("compaction",))] == [task.instant]
        assert view()["last_completed"]["instant"] == last, "the service's view shows the latest commit"
    finally:
        http.close()
        planner.send_signal(signal.SIGTERM)
        try:
            planner.wait(timeout=20)
        except subprocess.TimeoutExpired:
            planner.kill()
