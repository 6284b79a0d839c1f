"""Leader election by database lease. Every manager tries to take or renew the `manager` lease each
heartbeat; the holder is the leader, and the lease's epoch grows with each new holder (database clock).

Two guards keep a leader that lost its lease (paused by SIGSTOP, a long GC, a network partition) from
writing anything:
- locally, the leader counts its lease from the moment it *asked* to renew it, minus a margin, on its
  monotonic clock (which runs on while the process is stopped), and stops its periodic work when that
  time is up, before the lease ends in the database;
- in the database, every leader-only write runs in a `fenced()` transaction that checks the lease row
  at its epoch before it commits, the row share-locked, so a takeover cannot commit in between."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from tms.db import Database, LeaseRepo, bounded_idle
from tms.errors import TMSError

log = logging.getLogger(__name__)
LEASE_NAME = "manager"


class NotLeader(TMSError):
    """This manager does not hold the leader lease (any more): it must not write."""


class LeaderLease:
    def __init__(self, database: Database, holder: str, *, lease_seconds: float, heartbeat_seconds: float):
        self.database = database
        self.holder = holder
        self.lease_seconds = lease_seconds
        # Stop leading this long before the lease ends in the database (a renewal that is late or slow).
        self.margin = min(heartbeat_seconds, lease_seconds / 3)
        # A transaction quiet this long is a paused process's: the server ends it (bounded_idle), so a manager
        # paused on the lease row cannot keep a standby from taking over. Half a lease.
        self.idle_limit = lease_seconds / 2
        self._lock = threading.Lock()
        self._epoch: int | None = None
        self._valid_until = float("-inf")
        self._vacant_at: float | None = None  # when another holder's lease ends, unless renewed (monotonic)

    @property
    def epoch(self) -> int | None:
        """The epoch this manager leads at, or None when it is not (or no longer surely) the leader."""
        with self._lock:
            return self._epoch if time.monotonic() < self._valid_until else None

    def valid_for(self) -> float:
        """Seconds left of the local view of the lease (negative: not leading)."""
        with self._lock:
            return self._valid_until - time.monotonic() if self._epoch is not None else float("-inf")

    def try_acquire(self) -> int | None:
        """Take or renew the lease: the epoch held, or None (another manager leads)."""
        asked = time.monotonic()
        with self.database.transaction() as session:
            leases = LeaseRepo(bounded_idle(session, self.idle_limit))
            epoch = leases.acquire(LEASE_NAME, self.holder, self.lease_seconds)
            left = leases.expires_in(LEASE_NAME) if epoch is None else None
        with self._lock:
            self._epoch = epoch
            self._valid_until = asked + self.lease_seconds - self.margin if epoch is not None else float("-inf")
            self._vacant_at = time.monotonic() + max(0.0, left) if left is not None else None
        return epoch

    def vacant_in(self) -> float | None:
        """Seconds until the other holder's lease ends unless it renews it (a standby tries again right
        then, not at its next heartbeat: a dead leader is replaced within the lease); None when unknown."""
        with self._lock:
            return self._vacant_at - time.monotonic() if self._vacant_at is not None else None

    def forget(self) -> None:
        with self._lock:
            self._epoch, self._valid_until = None, float("-inf")

    def release(self) -> None:
        """Give the lease up (a clean stop), so a standby takes over at once."""
        with self._lock:
            epoch, self._epoch, self._valid_until = self._epoch, None, float("-inf")
        if epoch is not None:
            with self.database.transaction() as session:
                LeaseRepo(bounded_idle(session, self.idle_limit)).release(LEASE_NAME, self.holder, epoch)

    @contextmanager
    def fenced(self, epoch: int) -> Iterator[Session]:
        """A transaction for leader-only writes at `epoch`: NotLeader (and nothing written) unless this
        manager still holds the lease at that epoch, locally and in the database. The database check comes
        last, right before the commit, with the lease row share-locked until then: a takeover (an UPDATE of
        that row) cannot commit between the check and the commit, and the row is not held during the work."""
        if self.epoch != epoch:
            raise NotLeader(f"{self.holder} no longer leads at epoch {epoch}")
        with self.database.transaction() as session:
            yield bounded_idle(session, self.idle_limit)
            if self.epoch != epoch:  # the local lease ran out during the work: roll it back
                raise NotLeader(f"{self.holder}: the lease of epoch {epoch} ran out during the work")
            if not LeaseRepo(session).holds(LEASE_NAME, self.holder, epoch, lock=True):
                raise NotLeader(f"{self.holder} lost the lease of epoch {epoch}")
        try:
            with self.database.transaction() as session:
                LeaseRepo(bounded_idle(session, self.idle_limit)).mark_work(LEASE_NAME, self.holder, epoch)
        except Exception as exc:  # only a record of the work done
            log.debug("cannot record the leader's work: %s", exc)
