"""The database of `tms up`, made ready once by the parent before any role starts: the configured one, or
an embedded PostgreSQL under the data directory (created the first time), migrated to head. The roles get
its URL and do not migrate, so no two of them race to create or migrate it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from tms.db import migrate
from tms.db.embedded import embedded_database_url, stop_embedded
from tms.errors import TMSError


@dataclass(frozen=True)
class LocalDatabase:
    url: str
    embedded_in: Path | None  # the data directory whose embedded PostgreSQL this process started

    def stop(self) -> None:
        """Stop the embedded PostgreSQL (a configured database is left alone)."""
        if self.embedded_in is not None:
            stop_embedded(self.embedded_in)


def prepare(configured_url: str | None, data_dir: Path) -> LocalDatabase:
    url = configured_url or embedded_database_url(data_dir)
    database = LocalDatabase(url, None if configured_url else data_dir)
    try:
        migrate.upgrade(url)
    except SQLAlchemyError as e:
        database.stop()
        reason = str(getattr(e, "orig", e)).strip().splitlines()
        raise TMSError(f"cannot migrate the database: {reason[0] if reason else type(e).__name__}") from None
    return database
