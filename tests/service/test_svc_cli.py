"""The control-plane commands mounted into a Typer app: tokens create, db upgrade."""
from __future__ import annotations

import json

from sqlalchemy import create_engine
from typer.testing import CliRunner

from tms.cli import app as tms_app
from tms.db import TokenRepo, migrate, sqlalchemy_url
from tms.db.testing import scratch_database


def test_commands_are_registered():
    result = CliRunner().invoke(tms_app, ["--help"])
    assert result.exit_code == 0
    assert all(name in result.output for name in ("serve", "tokens", "db"))


def test_tokens_create_prints_a_working_token(app, monkeypatch, settings):
    monkeypatch.setenv("TMS_DATABASE_URL", settings.database_url)
    result = CliRunner().invoke(tms_app, ["tokens", "create", "--role", "operator", "--name", "ci"])
    assert result.exit_code == 0, result.output
    token = result.output.strip()
    with app.state.database.transaction() as session:
        assert TokenRepo(session).role_of(token) == "operator"
    bad = CliRunner().invoke(tms_app, ["tokens", "create", "--role", "root"])
    assert bad.exit_code != 0 and "expected viewer, operator or admin" in bad.output

    made = CliRunner().invoke(tms_app, ["tokens", "create", "--role", "viewer", "--name", "a script", "--json"])
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    assert (created["role"], created["name"]) == ("viewer", "a script") and created["id"] > 0
    with app.state.database.transaction() as session:
        assert TokenRepo(session).role_of(created["token"]) == "viewer"


def test_db_upgrade(monkeypatch):
    with scratch_database(migrated=False) as url:
        monkeypatch.setenv("TMS_DATABASE_URL", url)
        result = CliRunner().invoke(tms_app, ["db", "upgrade"])
        assert result.exit_code == 0, result.output
        engine = create_engine(sqlalchemy_url(url))
        assert migrate.is_at_head(engine)
        engine.dispose()
