"""Alembic environment: TMS's models are the target; migrations run under an advisory lock so
several processes starting at once migrate the database exactly once."""
from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, pool, text

from tms.db.engine import sqlalchemy_url
from tms.db.models import Base

MIGRATION_LOCK_KEY = 0x746D73  # "tms": any constant shared by every TMS process

config = context.config


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from tms.config import load_settings
    settings = load_settings()
    if not settings.database_url:
        raise SystemExit("set TMS_DATABASE_URL (or sqlalchemy.url) to run migrations")
    return sqlalchemy_url(settings.database_url)


def _migrate(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata, compare_type=True)
    with context.begin_transaction():
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as conn:
        _migrate(conn)
    engine.dispose()
