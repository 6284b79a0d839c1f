"""Open the database a TMS process uses: the configured one, or the embedded one under the data
directory, migrated to head first unless told not to."""
from __future__ import annotations

from ..config import Settings
from . import migrate
from .embedded import embedded_database_url
from .engine import Database


def database_url(settings: Settings) -> str:
    return settings.database_url or embedded_database_url(settings.data_dir)


def open_database(settings: Settings) -> Database:
    url = database_url(settings)
    if settings.migrate_on_start:
        migrate.upgrade(url)
    return Database(url, pool_size=settings.db_pool_size)
