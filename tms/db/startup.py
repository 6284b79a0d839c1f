"""Open the database a TMS process uses: the configured one, or the embedded one under the data
directory, migrated to head first unless told not to."""
from __future__ import annotations

from dataclasses import dataclass

from .. import local_instances
from ..config import Settings
from . import migrate
from .embedded import embedded_database_url, has_embedded_database
from .engine import Database
from .errors import DatabaseError

CONFIGURED = "TMS_DATABASE_URL"


@dataclass(frozen=True)
class FoundDatabase:
    url: str
    origin: str  # where it was found, for people: "TMS_DATABASE_URL", "the TMS running from /x (pid 5)", ...

    @property
    def configured(self) -> bool:
        return self.origin == CONFIGURED


def database_url(settings: Settings) -> str:
    return settings.database_url or embedded_database_url(settings.data_dir)


def open_database(settings: Settings) -> Database:
    url = database_url(settings)
    if settings.migrate_on_start:
        migrate.upgrade(url)
    return Database(url, pool_size=settings.db_pool_size)


def existing_database(settings: Settings) -> FoundDatabase:
    """A database that exists already, for commands that must not create one (`tms tokens create`):
    TMS_DATABASE_URL; else the database of the `tms up` running from the data directory; else the data
    directory's embedded database, if one was created (started if it is stopped); else that of the one
    `tms up` running on this machine, whatever its directory. DatabaseError when there is none."""
    if settings.database_url:
        return FoundDatabase(settings.database_url, CONFIGURED)
    data_dir = settings.data_dir.expanduser().resolve()
    instance = local_instances.running_for(data_dir)
    if instance is None and has_embedded_database(data_dir):
        return FoundDatabase(embedded_database_url(data_dir), f"the embedded database in {data_dir}")
    others = local_instances.running()
    if instance is None and len(others) > 1:
        raise DatabaseError(f"{data_dir} holds no TMS database and several `tms up` run (data directories "
                            f"{', '.join(i.data_dir for i in others)}): set TMS_DATA_DIR to one of them")
    instance = instance or (others[0] if others else None)
    if instance is None:
        raise DatabaseError(f"found no TMS database: TMS_DATABASE_URL is unset, {data_dir} holds none, and no "
                            f"`tms up` runs on this machine; start `tms up`, or set TMS_DATABASE_URL or TMS_DATA_DIR")
    return FoundDatabase(instance.database_url, f"the TMS running from {instance.data_dir} (pid {instance.pid})")
