"""A TMS process's life, shared by every role: who it is (its instance id and version), its row in `instances`
(registered at its first heartbeat, refreshed at each, removed on a clean stop, so the API and the manager know
which processes are alive), the role loop (`RoleLoop`: wake-ups, turns, heartbeats, stop, deregistration) that
planner, worker, manager and service run with their own turn and facts, and how a role's command runs it until
SIGTERM or SIGINT."""
from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any, Protocol

from tms.config import Settings
from tms.db import Database, InstanceRecord, InstanceRepo

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
    """The process's row in `instances`: `beat` records it (raising on a database error, for callers that tell),
    `deregister` removes it on a clean stop."""

    def __init__(self, database: Database, roles: list[str], *, instance_id: str | None = None):
        self.database = database
        self.roles = roles
        self.id = instance_id or new_instance_id()

    def beat(self, info: dict[str, Any]) -> None:
        with self.database.transaction() as session:
            InstanceRepo(session).heartbeat(self.id, roles=self.roles, host=socket.gethostname(), pid=os.getpid(),
                                            version=tms_version(), info=info)

    def deregister(self) -> None:
        try:
            with self.database.transaction() as session:
                InstanceRepo(session).remove(self.id)
        except Exception as exc:  # the row then simply goes stale
            log.warning("could not deregister %s %s: %s", "/".join(self.roles), self.id, exc)


# A worker's heartbeat fact: the job timeout it applies (its own setting), which the manager judges its tasks by.
JOB_TIMEOUT_FACT = "job_timeout_seconds"


def worker_timeouts(instances: Iterable[InstanceRecord]) -> dict[str, float]:
    """The job timeout each worker instance applies, by instance id, as its heartbeat's facts say."""
    return {i.id: float(i.info[JOB_TIMEOUT_FACT]) for i in instances
            if "worker" in i.roles and isinstance(i.info.get(JOB_TIMEOUT_FACT), int | float)}


class Role(Protocol):
    """What a role supplies to its loop: its turn and its facts."""

    def turn(self) -> float | None:
        """One pass of the role's work. Returns how long the loop may wait before the next pass (0: at once;
        None: the loop's poll interval); a wake-up or a due heartbeat ends the wait sooner."""

    def facts(self) -> dict[str, Any]:
        """What the role's heartbeat records in its row (`info` in `GET /api/v1/instances`)."""


class RoleLoop:
    """A role's loop, the same for every role: a turn at each wake-up (`wake()`, the poll interval, or a due
    heartbeat), its row's heartbeat every `heartbeat_seconds` just after the turn (so its facts are fresh), until
    `stop()`; then the role's `finish` and the row's removal. A turn or a heartbeat that fails is logged and the
    loop goes on: a role keeps working through a database outage, its row just goes stale."""

    def __init__(self, database: Database, roles: list[str], *, heartbeat_seconds: float,
                 poll_seconds: float | None = None, instance_id: str | None = None):
        self.row = InstanceRow(database, roles, instance_id=instance_id)
        self.id = self.row.id
        self.heartbeat_seconds = heartbeat_seconds
        self.poll_seconds = heartbeat_seconds if poll_seconds is None else poll_seconds
        self.beating = False  # whether the current turn is followed by a heartbeat
        self._next_beat = float("-inf")  # monotonic
        self._stopping = threading.Event()
        self._wake = threading.Event()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def wake(self) -> None:
        """Take the next turn now (or as soon as the current one ends)."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def beat_within(self, seconds: float) -> None:
        """Bring the next heartbeat (and its turn) forward to at most `seconds` from now: called in a turn, whose
        wait it shortens (it wakes no waiting loop)."""
        self._next_beat = min(self._next_beat, time.monotonic() + seconds)

    def run(self, role: Role, *, finish: Callable[[], None] | None = None) -> None:
        """Take the role's turns until `stop()`; then `finish()` (what the role does on its way out) and remove
        the row."""
        name = "/".join(self.row.roles)
        try:
            while not self.stopping:
                started = time.monotonic()
                self.beating = started >= self._next_beat
                if self.beating:
                    self._next_beat = started + self.heartbeat_seconds
                try:
                    wait = role.turn()
                except Exception:  # a database outage: try again next turn
                    log.exception("%s %s: turn failed", name, self.id)
                    wait = None
                if self.beating:
                    try:
                        self.row.beat(role.facts())
                    except Exception as exc:  # try again at the next heartbeat, not at every turn
                        log.warning("%s %s: heartbeat failed: %s", name, self.id, exc)
                wait = min(self.poll_seconds if wait is None else wait, self._next_beat - time.monotonic())
                if wait > 0:
                    self._wake.wait(wait)
                    self._wake.clear()
        finally:
            try:
                if finish is not None:
                    finish()
            finally:
                self.row.deregister()


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
