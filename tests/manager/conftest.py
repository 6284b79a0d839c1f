"""Fixtures of the manager tests: the worker suite's real service, database, queue, worker and planner
fixtures (the manager's scenarios run real jobs), a manager role in a thread, a real HTTP receiver for
webhooks, and jobs made to fail or linger on demand (a sitecustomize on the jobs' PYTHONPATH)."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from manager_support import FAST_MANAGER, FAST_RETRY, FAULTS_SITECUSTOMIZE

from manager.process import ManagerService
from tms.config import Settings

WORKER_TESTS = Path(__file__).resolve().parents[1] / "worker"
sys.path.insert(0, str(WORKER_TESTS))  # worker_support, shared with the worker suite
_spec = importlib.util.spec_from_file_location("worker_suite_fixtures", WORKER_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_fixtures = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _fixtures
_spec.loader.exec_module(_fixtures)
service, db, local_queue, start_worker, start_planner = (  # noqa: F401 (fixtures)
    _fixtures.service, _fixtures.db, _fixtures.local_queue, _fixtures.start_worker, _fixtures.start_planner)

@pytest.fixture
def job_faults(tmp_path, monkeypatch):
    """job_faults("crash", "crash") -> the next jobs started behave so, one word each (crash, oom,
    sleep<seconds>); later jobs run normally. Jobs are child processes: the plan is a file they read."""
    site = tmp_path / "faults-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAULTS_SITECUSTOMIZE)
    plan = tmp_path / "faults"
    plan.write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("TMS_TEST_JOB_FAULTS", str(plan))

    def set_plan(*faults: str) -> Path:
        plan.write_text(" ".join(faults))
        return plan
    return set_plan


@pytest.fixture
def start_manager(db):
    """start_manager(**settings) -> a manager role running in a thread (fast intervals)."""
    started: list[tuple[ManagerService, threading.Thread]] = []

    def start(**overrides) -> ManagerService:
        manager = ManagerService(db, Settings(database_url=db.url, **{**FAST_MANAGER, **FAST_RETRY, **overrides}))
        thread = threading.Thread(target=manager.run, daemon=True)
        thread.start()
        started.append((manager, thread))
        return manager

    def stop(manager: ManagerService) -> None:
        for m, thread in started:
            if m is manager:
                m.stop()
                thread.join(timeout=30)

    start.stop = stop  # type: ignore[attr-defined]
    yield start
    for manager, _ in started:
        manager.stop()
    for _, thread in started:
        thread.join(timeout=30)


@dataclass
class Received:
    delivery: str
    signature: str
    body: str

    @property
    def document(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook receiver on a free loopback port: it answers 503 to the first `refuse` requests, then 200,
    and records what it accepted."""
    url: str = ""
    refuse: int = 0
    refused: int = 0
    accepted: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def receiver():
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            with state.lock:
                if state.refused < state.refuse:
                    state.refused += 1
                    status = 503
                else:
                    state.accepted.append(Received(self.headers.get("X-TMS-Delivery", ""),
                                                   self.headers.get("X-TMS-Signature", ""), body))
                    status = 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
