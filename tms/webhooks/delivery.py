"""The webhook deliverer: sends the outbox's due deliveries (written with their alerts), signed, and retries
each with backoff until the receiver accepts it (2xx) or it is older than `webhook_max_age_seconds`.

The manager's leader sends every delivery, in its fenced transactions; whoever notices that no manager
leads (tms.leadership.watch) sends the `no_leader` alert's own, in plain ones, since no leader would.

A delivery is taken (its next attempt pushed past the request's timeout, its row locked SKIP LOCKED) in one
transaction, sent outside any transaction, and its attempt recorded in another: a leader change between
the two may send a delivery twice, never lose it; receivers deduplicate by `X-TMS-Delivery`."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from sqlalchemy.orm import Session

from tms.config import ManagerSettings
from tms.db import WebhookRepo
from tms.webhooks.payload import signature

log = logging.getLogger(__name__)
BATCH = 50
MAX_BACKOFF_SECONDS = 600.0
Transaction = Callable[[], AbstractContextManager[Session]]  # the leader's: lambda: lease.fenced(epoch)


@dataclass(frozen=True)
class Outgoing:
    delivery_id: int
    url: str
    secret: str | None
    body: str
    attempts: int


class Deliverer:
    def __init__(self, manager: ManagerSettings, client: httpx.Client | None = None):
        self.manager = manager  # the webhook_* settings
        self.client = client or httpx.Client(timeout=manager.webhook_timeout_seconds)

    def close(self) -> None:
        self.client.close()

    def run_once(self, transaction: Transaction, *, kinds: Collection[str] | None = None) -> int:
        """Send what is due now (only the deliveries of alerts of `kinds`, if given), taking and recording
        them in `transaction`s; the number delivered."""
        started = time.monotonic()
        results = []
        for outgoing in self._take(transaction, kinds):
            # A slow receiver must not keep the batch's attempts unrecorded for long: the rest wait for the
            # next run (their hold ends after a request's timeout).
            if time.monotonic() - started > self.manager.webhook_timeout_seconds:
                break
            results.append((outgoing, *self._send(outgoing)))
        if results:
            self._record(transaction, results)
        return sum(1 for _, status, _ in results if _accepted(status))

    def _take(self, transaction: Transaction, kinds: Collection[str] | None) -> list[Outgoing]:
        hold = self.manager.webhook_timeout_seconds + 5  # no second sender while this one tries
        with transaction() as session:
            repo = WebhookRepo(session)
            expired = repo.expire_older_than(self.manager.webhook_max_age_seconds)
            if expired:
                log.warning("%s webhook deliveries expired undelivered after %.0f s", expired,
                            self.manager.webhook_max_age_seconds)
            taken = [Outgoing(d.id, w.url, w.secret, d.body, d.attempts) for d, w in repo.due(BATCH, kinds=kinds)]
            if taken:
                repo.hold([o.delivery_id for o in taken], hold)
        return taken

    def _send(self, outgoing: Outgoing) -> tuple[int | None, str | None]:
        headers = {"Content-Type": "application/json", "X-TMS-Delivery": str(outgoing.delivery_id),
                   "User-Agent": "tms-webhook"}
        if outgoing.secret:
            headers["X-TMS-Signature"] = signature(outgoing.secret, int(time.time()), outgoing.body)
        try:
            response = self.client.post(outgoing.url, content=outgoing.body.encode(), headers=headers)
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"[:500]
        return response.status_code, None if response.is_success else response.text[:500]

    def _record(self, transaction: Transaction, results: list[tuple[Outgoing, int | None, str | None]]) -> None:
        """Record a batch of attempts in one transaction."""
        at = datetime.now(UTC).isoformat()
        with transaction() as session:
            repo = WebhookRepo(session)
            for outgoing, status, error in results:
                repo.record_attempt(outgoing.delivery_id, at=at, status=status, error=error,
                                    delivered=_accepted(status), retry_in_seconds=self._wait(outgoing))
        for outgoing, status, error in results:
            if _accepted(status):
                log.info("webhook delivery %s sent to %s (attempt %s)", outgoing.delivery_id, outgoing.url,
                         outgoing.attempts + 1)
            else:
                log.warning("webhook delivery %s to %s failed (attempt %s): %s; next in %.0f s", outgoing.delivery_id,
                            outgoing.url, outgoing.attempts + 1, error or status, self._wait(outgoing))

    def _wait(self, outgoing: Outgoing) -> float:
        return min(self.manager.webhook_backoff_seconds * 2 ** outgoing.attempts, MAX_BACKOFF_SECONDS)


def _accepted(status: int | None) -> bool:
    return status is not None and 200 <= status < 300
