"""Wake-ups across processes through PostgreSQL's LISTEN/NOTIFY: a transaction that makes a task runnable
notifies `TASK_RUNNABLE` (delivered at its commit, once per transaction), and a worker listening claims at once
rather than at its next poll. A notification is a hint: polling stays the guarantee (a listener that reconnects
misses what was sent meanwhile, and one that cannot connect only logs it)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from psycopg import sql
from sqlalchemy import text
from sqlalchemy.orm import Session

from .engine import libpq_url

log = logging.getLogger(__name__)
TASK_RUNNABLE = "tms_task_runnable"
_STOP_CHECK_SECONDS = 1.0  # how long a listener waits for a notification before it looks whether it should stop
_RECONNECT_SECONDS = 5.0


def notify(session: Session, channel: str) -> None:
    """Notify `channel` when the session's transaction commits (not at all if it rolls back)."""
    session.execute(text("SELECT pg_notify(:channel, '')"), {"channel": channel})


class Listener:
    """A thread that calls `on_notify()` for each notification of `channel`, on a connection of its own."""

    def __init__(self, url: str, channel: str, on_notify: Callable[[], None]):
        self.url = libpq_url(url)
        self.channel = channel
        self.on_notify = on_notify
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"listen-{channel}", daemon=True)

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=_STOP_CHECK_SECONDS * 5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as connection:
                    connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    while not self._stopping.is_set():
                        for _ in connection.notifies(timeout=_STOP_CHECK_SECONDS):
                            self.on_notify()
                            if self._stopping.is_set():
                                break
            except Exception as exc:  # the database is down: polling goes on meanwhile
                log.warning("listening on %s failed (%s); again in %.0f s", self.channel, exc, _RECONNECT_SECONDS)
                self._stopping.wait(_RECONNECT_SECONDS)
