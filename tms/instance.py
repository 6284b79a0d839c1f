"""A TMS process's life, shared by every role: who it is (its instance id and version), its row in `instances`
(registered at its first heartbeat, refreshed at each, removed on a clean stop, so the API and the manager know
which processes are alive), and how a role's command runs it until SIGTERM or SIGINT."""
from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol

from tms.config import Settings
from tms.db import Database, InstanceRepo

log = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@functools.cache  # read from the installed package's metadata: a file read, once per process, not per heartbeat
def tms_version() -> str:
    try:
        return metadata.version("tms")
    except metadata.PackageNotFoundError:  # running from a checkout
        return "dev"


def new_instance_id() -> str:
    """host:pid:random — unique per process start, readable in `GET /api/v1/instances`."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class InstanceRow:
    """The process's row in `instances`. `beat` records it (raising on a database error, for callers that tell);
    `beat_if_due` records it at most once per `interval_seconds` and logs a failure (a role keeps working through
    a database outage: its row just goes stale); `deregister` removes it on a clean stop."""

    def __init__(self, database: Database, roles: list[str], *, interval_seconds: float,
                 instance_id: str | None = None):
        self.database = database
        self.roles = roles
        self.interval = interval_seconds
        self.id = instance_id or new_instance_id()
        self._last_beat = float("-inf")

    def beat(self, info: dict[str, Any]) -> None:
        with self.database.transaction() as session:
            InstanceRepo(session).heartbeat(self.id, roles=self.roles, host=socket.gethostname(), pid=os.getpid(),
                                            version=tms_version(), info=info)
        self._last_beat = time.monotonic()

    def beat_if_due(self, info: Callable[[], dict[str, Any]]) -> None:
        if time.monotonic() - self._last_beat < self.interval:
            return
        try:
            self.beat(info())
        except Exception as exc:  # keep working through a heartbeat failure
            self._last_beat = time.monotonic()  # and try again at the next interval, not at every turn
            log.warning("%s %s: heartbeat failed: %s", "/".join(self.roles), self.id, exc)

    def deregister(self) -> None:
        try:
            with self.database.transaction() as session:
                InstanceRepo(session).remove(self.id)
        except Exception as exc:  # the row then simply goes stale
            log.warning("could not deregister %s %s: %s", "/".join(self.roles), self.id, exc)


class RoleProcess(Protocol):
    def run(self) -> None: ...
    def stop(self) -> None: ...


def run_role(settings: Settings, make: Callable[[Database], RoleProcess], *,
             quiet_loggers: dict[str, int] | None = None) -> None:
    """Run a role's process until SIGTERM or SIGINT asks it to stop: logging at the settings' level, the database
    opened for it (and disposed after), `make(database)` built, its `run()` called, `stop()` on a signal.
    `quiet_loggers`: a minimum level for chatty libraries' loggers."""
    from tms.db import open_database

    logging.basicConfig(level=settings.log_level, format=LOG_FORMAT)
    for name, level in (quiet_loggers or {}).items():
        logging.getLogger(name).setLevel(max(level, logging.getLogger().level))
    database = open_database(settings)
    try:
        process = make(database)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: process.stop())
        process.run()
    finally:
        database.dispose()
