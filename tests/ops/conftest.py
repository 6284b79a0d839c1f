"""Fixtures of the ops CLI tests: one live TMS service per session (uvicorn on a real port, in a thread)
on a scratch database emptied before each test, tokens per role, and `tms(...)` running a command of the
real `tms` app against it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text
from support import served
from typer.testing import CliRunner, Result

from service.app import create_app
from tms.cli import app as tms_app
from tms.config import Settings
from tms.db import Database, TokenRepo
from tms.db.models import Base
from tms.db.testing import scratch_database

ADMIN_TOKEN = "admin-token-for-ops-tests"


@dataclass(frozen=True)
class LiveService:
    url: str
    app: object
    database: Database
    storage_root: Path


@pytest.fixture(scope="session")
def live_service(tmp_path_factory):
    root = tmp_path_factory.mktemp("ops-tables")
    with scratch_database() as url:
        settings = Settings(database_url=url, admin_token=ADMIN_TOKEN, storage_roots=[str(root)],
                            heartbeat_seconds=3600, cache_seconds=0)  # a revoked token fails at once
        database = Database(url, pool_size=10)
        app = create_app(settings, database)
        with served(app) as url:
            yield LiveService(url, app, database, root)
        database.dispose()


@pytest.fixture
def service(live_service) -> LiveService:
    """The live service, its database emptied (and its caches with it)."""
    names = ", ".join(t.name for t in Base.metadata.sorted_tables if t.name != "instances")
    with live_service.database.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    live_service.app.state.intake.tables.clear()
    return live_service


@pytest.fixture
def tokens(service) -> dict[str, str]:
    """A token per role, stored in the database."""
    made = {}
    with service.database.transaction() as session:
        for role in ("viewer", "operator", "admin"):
            _, made[role] = TokenRepo(session).create(role, f"ops {role}")
    return made


@pytest.fixture
def tms(service, tokens) -> Callable[..., Result]:
    """tms(*args, role="admin", token=None, url=None) -> the result of `tms args...` against the live service
    (TMS_URL and TMS_TOKEN in its environment)."""

    def run(*args: str, role: str | None = "admin", token: str | None = None, url: str | None = None,
            input: str | None = None) -> Result:
        env = {"TMS_URL": url or service.url, "TMS_TOKEN": token or (tokens[role] if role else "")}
        return CliRunner().invoke(tms_app, list(args), env=env, input=input)

    return run
