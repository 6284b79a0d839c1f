"""The `no_leader` alert: no manager has held a live leader lease for longer than the lease and one
heartbeat (no manager runs, or every one is stuck or cut off from the database).

The leader cannot raise it (there is none), so whoever can notice does: every manager at each heartbeat
(a standby sees it first, and a leader resolves it as soon as it leads), and every service process at each
of its heartbeats, since with no manager at all nobody else would. All of them converge on one open alert
(one open alert per type and subject: a unique index). How long the lease has been vacant is told by the
database clock from the lease row (the end of the last holder's lease, or when a watcher first found it
never held), and from the watcher's own first look, so a failover that goes as designed (a standby takes
over within one heartbeat of the expiry) never fires it, nor a deployment started again after a long stop.

With no leader, nobody sends the webhooks either: a watcher sends the `no_leader` alert's own deliveries
(tms.webhooks.delivery); the rest wait for the next leader."""
from __future__ import annotations

import logging
from datetime import datetime

from tms.config import Settings
from tms.db import AlertRepo, Database, LeaseRepo, Sighting
from tms.webhooks.delivery import Deliverer

from .lease import LEASE_NAME

log = logging.getLogger(__name__)
KIND = "no_leader"
SUBJECT = f"lease:{LEASE_NAME}"


class LeaderWatch:
    """One process's watch. It vouches only for the time it has watched: a vacancy is counted from the end of
    the last lease or this watch's first look, whichever is later, so a deployment started again after a
    long stop gives its managers their lease and heartbeat before anyone is told."""

    def __init__(self, database: Database, settings: Settings):
        self.database = database
        self.settings = settings
        self.watching_since: datetime | None = None  # database clock

    def check(self) -> bool:
        """Fire, count or resolve the `no_leader` alert from the lease row now: True while it fires."""
        grace = self.settings.manager.lease_seconds + self.settings.manager.heartbeat_seconds
        with self.database.transaction() as session:
            holder, expires_at, now = LeaseRepo(session).term(LEASE_NAME)
            self.watching_since = self.watching_since or now
            alerts = AlertRepo(session)
            live = holder is not None and expires_at > now
            vacant = 0.0 if live else (now - max(expires_at, self.watching_since)).total_seconds()
            if vacant <= grace:
                if live and alerts.resolve(f"{KIND}:{SUBJECT}") is not None:
                    log.info("no_leader resolved: %s leads", holder)
                return False
            since = (now - expires_at).total_seconds()
            _, created = alerts.fire(KIND, SUBJECT, Sighting("critical", _message(holder, expires_at, since),
                                                             details={"vacant_seconds": round(since, 1),
                                                                      "last_leader": holder}))
        if created:
            log.error("no_leader fired: no manager has led for %.0f s", since)
        return True

    def watch(self, deliverer: Deliverer) -> None:
        """One look (at a heartbeat): the alert, and while it fires, its deliveries. Never raises: a database
        outage is the caller's to report, not a reason to stop beating."""
        try:
            if self.check():
                deliverer.run_once(self.database.transaction, kinds=(KIND,))
        except Exception as exc:
            log.warning("cannot check for a leader: %s", exc)


def _message(holder: str | None, expires_at: datetime, vacant: float) -> str:
    last = f"the lease of {holder} ended" if holder else "the lease was free"
    return (f"no manager leads: {last} at {expires_at:%Y-%m-%d %H:%M:%S} ({vacant:.0f} s ago); retries, "
            "restores, alerts and webhooks wait for a leader")
