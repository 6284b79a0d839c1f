"""Connections to the metadata database: one `Database` per process, transactions as context managers."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, create_engine, make_url, text
from sqlalchemy.orm import Session, sessionmaker

DRIVER = "postgresql+psycopg"


def sqlalchemy_url(url: str) -> str:
    """The URL with the psycopg 3 driver, whichever PostgreSQL spelling it came in
    (`postgres://`, `postgresql://`, `postgresql+psycopg://`)."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"unsupported database URL {parsed.render_as_string(hide_password=True)}: "
                         "TMS needs PostgreSQL")
    return parsed.set(drivername=DRIVER).render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The URL as libpq and psycopg take it (`postgresql://...`)."""
    return make_url(sqlalchemy_url(url)).set(drivername="postgresql").render_as_string(hide_password=False)


class Database:
    """An engine and its session factory. Sessions expire nothing on commit, so rows read in a
    transaction stay readable after it (they are plain records to callers)."""

    def __init__(self, url: str, *, pool_size: int = 10):
        self.url = sqlalchemy_url(url)
        self.engine: Engine = create_engine(self.url, pool_size=pool_size, max_overflow=pool_size)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session inside one transaction: committed on success, rolled back on error."""
        with self.sessions.begin() as session:
            yield session

    @contextmanager
    def autocommit(self) -> Iterator[Connection]:
        """A connection whose every statement commits on its own: one round trip for a single
        statement that must be durable when it returns."""
        with self.engine.connect() as connection:
            yield connection.execution_options(isolation_level="AUTOCOMMIT")

    def ping(self) -> None:
        """One round trip (readiness): raises if the database cannot be reached."""
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()


def bounded_idle(session: Session, seconds: float) -> Session:
    """Have the server end `session`'s transaction (and free its row locks) if the process goes quiet in it for
    `seconds`: when it wakes, its connection is gone and nothing of the transaction commits."""
    session.execute(text(f"SET LOCAL idle_in_transaction_session_timeout = {max(1, int(seconds * 1000))}"))
    return session
