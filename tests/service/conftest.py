"""Fixtures for the HTTP service: one scratch PostgreSQL database and one app per test session,
emptied before each test; real Hudi tables unzipped from the shared fixtures."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from sqlalchemy import text

from service.app import create_app
from tms.config import Settings
from tms.db import Base, Database, TokenRepo
from tms.db.testing import scratch_database

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "hudi"  # beside the repository
ADMIN_TOKEN = "admin-token-for-tests"
CALLBACK_KEY = "callback-key-for-tests"


def pytest_configure(config):
    # Starlette's TestClient warns that it will move to httpx2; irrelevant here.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


@pytest.fixture(scope="session")
def hudi_tables(tmp_path_factory) -> dict[str, Path]:
    """Zip name (without .zip) -> the unzipped table's base path."""
    if not FIXTURES.is_dir():
        pytest.skip(f"no Hudi fixtures at {FIXTURES}")
    root = tmp_path_factory.mktemp("hudi")
    tables = {}
    for archive in sorted(FIXTURES.glob("*.zip")):
        target = root / archive.stem
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target, [n for n in zf.namelist() if not n.startswith("__MACOSX")])
        (folder,) = [p for p in target.iterdir() if p.is_dir()]
        tables[archive.stem] = folder
    return tables


@pytest.fixture(scope="session")
def database_url():
    with scratch_database() as url:
        yield url


@pytest.fixture(scope="session")
def settings(database_url, hudi_tables) -> Settings:
    root = next(iter(hudi_tables.values())).parents[1]
    return Settings(database_url=database_url, admin_token=ADMIN_TOKEN, callback_key=CALLBACK_KEY,
                    storage_roots=[str(root)], max_body_bytes=256 * 1024, heartbeat_seconds=3600)


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
