"""Fixtures for the HTTP service: one scratch PostgreSQL database and one app per test session,
emptied before each test; real Hudi tables unzipped from the shared fixtures."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from support import TIMEOUT_SCALE

from service.app import create_app
from tms.config import Settings
from tms.db import Database, TokenRepo
from tms.db.models import Base
from tms.db.testing import scratch_database

REPO = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "admin-token-for-tests"
CALLBACK_KEY = "callback-key-for-tests"


def pytest_configure(config):
    # Starlette's TestClient warns that it will move to httpx2; irrelevant here.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


@pytest.fixture(scope="session")
def hudi_tables(fixture_tables) -> dict[str, Path]:
    """Zip name (without .zip) -> the unzipped table's base path (read-only)."""
    return fixture_tables


@pytest.fixture(scope="session")
def database_url():
    with scratch_database() as url:
        yield url


@pytest.fixture(scope="session")
def settings(database_url, hudi_tables) -> Settings:
    root = next(iter(hudi_tables.values())).parent
    return Settings(database_url=database_url, admin_token=ADMIN_TOKEN, callback_key=CALLBACK_KEY,
                    storage_roots=[str(root)], max_body_bytes=256 * 1024, max_bulk_body_bytes=512 * 1024,
                    heartbeat_seconds=3600)


@pytest.fixture(scope="session")
def app(settings):
    database = Database(settings.database_url)
    application = create_app(settings, database)
    yield application
    database.dispose()


@pytest.fixture(scope="session")
def session_client(app):
    from fastapi.testclient import TestClient  # imported late: its deprecation warning is filtered above

    with TestClient(app) as client:
        yield client


@pytest.fixture
def client(app, session_client):
    """The app's client, with an empty database (the app's caches cleared too)."""
    database = app.state.database
    names = ", ".join(t.name for t in Base.metadata.sorted_tables if t.name != "instances")
    with database.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    app.state.intake.tables.clear()
    return session_client


@pytest.fixture
def tokens(client, app) -> dict[str, dict[str, str]]:
    """Authorization headers per role (viewer, operator, admin from the database; env admin)."""
    headers = {"env_admin": {"Authorization": f"Bearer {ADMIN_TOKEN}"}}
    with app.state.database.transaction() as session:
        for role in ("viewer", "operator", "admin"):
            _, token = TokenRepo(session).create(role, f"test {role}")
            headers[role] = {"Authorization": f"Bearer {token}"}
    return headers


@pytest.fixture
def register(client, tokens, hudi_tables):
    """register(fixture_name, **fields) -> the registered table's JSON."""

    def _register(name: str, **fields):
        response = client.post("/api/v1/tables", json={"base_path": str(hudi_tables[name]), **fields},
                               headers=tokens["admin"])
        assert response.status_code == 201, response.text
        return response.json()

    return _register


@pytest.fixture
def callback_headers() -> dict[str, str]:
    return {"HUDI-CALLBACK-KEY": CALLBACK_KEY}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def start_service(tmp_path):
    """start_service(argv, env) -> base URL of `python <argv> --port <a free port>`, once GET /readyz
    answers 200. Every process is stopped after the test."""
    processes: list[subprocess.Popen] = []

    def _start(argv: list[str], env: dict[str, str], timeout: float = 60.0) -> str:
        port = free_port()
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
        log = open(tmp_path / f"service-{port}.log", "w")
        proc = subprocess.Popen([sys.executable, *argv, "--port", str(port)], cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT,
                                env={**clean, "TMS_PORT": str(port), "TMS_HEARTBEAT_SECONDS": "1", **env})
        processes.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout * TIMEOUT_SCALE
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"service exited: {(tmp_path / f'service-{port}.log').read_text()}")
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    return url
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"service not ready: {(tmp_path / f'service-{port}.log').read_text()}")

    yield _start
    for proc in processes:
        proc.send_signal(signal.SIGTERM)
    for proc in processes:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
