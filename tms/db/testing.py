"""Throwaway databases for tests, on a real PostgreSQL: `TMS_TEST_DATABASE_URL` if set, else the
server on 127.0.0.1:5432 (user postgres) if one answers, else a private server started for the
test session in a temporary folder (pgserver, or the machine's binaries). Each database gets a
unique name and is dropped afterwards."""
from __future__ import annotations

import atexit
import functools
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from . import migrate
from .embedded import create_database, import_pgserver, start_with_binaries, stop_with_binaries, with_database
from .engine import libpq_url

TEST_URL_ENV = "TMS_TEST_DATABASE_URL"
LOCAL_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


def _answers(url: str) -> bool:
    try:
        psycopg.connect(libpq_url(url), connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


@functools.cache
def scratch_server_url() -> str:
    """A PostgreSQL server tests may create databases on (started once per process if needed)."""
    configured = os.environ.get(TEST_URL_ENV)
    if configured:
        return configured
    if _answers(LOCAL_SERVER):
        return LOCAL_SERVER
    folder = Path(tempfile.mkdtemp(prefix="tms-test-pg-"))
    folder.chmod(0o755)  # the server may run as the postgres user (when tests run as root)
    atexit.register(shutil.rmtree, folder, True)
    pgserver = import_pgserver()
    if pgserver is None:
        pgdata = folder / "pgdata"
        url = start_with_binaries(pgdata)
        atexit.register(stop_with_binaries, pgdata)
        return url
    return pgserver.get_server(folder / "pgdata", cleanup_mode="delete").get_uri()


@contextmanager
def scratch_database(*, migrated: bool = True) -> Iterator[str]:
    """A new, uniquely named database (at head unless `migrated=False`); dropped on exit."""
    server = scratch_server_url()
    name = f"tms_test_{os.getpid()}_{secrets.token_hex(4)}"
    create_database(server, name)
    url = with_database(server, name)
    try:
        if migrated:
            migrate.upgrade(url)
        yield url
    finally:
        with psycopg.connect(libpq_url(with_database(server, "postgres")), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
