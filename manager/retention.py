"""The retention of TMS's own history, run by the leader every `manager_retention_seconds`: each kind of row older
than its retention (tms.db.RetentionRepo says what is kept whatever its age) is removed in transactions of at
most `retention_batch_rows` rows, each fenced by the lease, with `retention_pause_seconds` between them, so the
service and the other roles go on meanwhile."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from prometheus_client import Counter

from tms.config import Settings
from tms.db import Purged, RetentionCursor, RetentionRepo
from tms.leadership import LeaderLease

from .early_warning import HISTORY

log = logging.getLogger(__name__)

Purge = Callable[[RetentionRepo, int, RetentionCursor | None], Purged]


def _purges(settings: Settings) -> list[tuple[str, Purge]]:
    """Each kind (a table's name) and its purge at its retention, children before their parents; a purge takes the
    repository, the batch's size and where the last batch of the kind stopped (None: from the oldest)."""
    days = timedelta(days=settings.manager.retention_days)
    events = timedelta(days=settings.manager.retention_events_days)
    samples = timedelta(days=settings.manager.health_history_days)
    return [
        ("events", lambda repo, n, _: repo.purge_events(events, n)),
        ("health_samples", lambda repo, n, _: repo.purge_health_samples(samples, n)),
        ("webhook_deliveries", lambda repo, n, _: repo.purge_webhook_deliveries(days, n)),
        ("alerts", lambda repo, n, _: repo.purge_alerts(days, n)),
        ("shadow_runs", lambda repo, n, _: repo.purge_shadow_runs(days, n)),
        ("task_attempts", lambda repo, n, after: repo.purge_attempts(days, n, after)),
        # the forecasts (early_warning, freshness) fit each table's last HISTORY succeeded runs of a service
        ("tasks", lambda repo, n, after: repo.purge_tasks(days, n, after, keep_succeeded=HISTORY)),
    ]


def purge_history(lease: LeaderLease, epoch: int, settings: Settings, *, removed: Counter | None = None,
                  stopping: Callable[[], bool] = lambda: False) -> dict[str, int]:
    """Remove the history past its retention, batch by batch, until none is left or `stopping()`; the rows
    removed per kind (a table's name), also added to `removed` (labelled by kind). NotLeader stops it."""
    batch, totals = settings.manager.retention_batch_rows, dict[str, int]()
    for _kind, purge in _purges(settings):
        cursor: RetentionCursor | None = None
        while not stopping():
            with lease.fenced(epoch) as session:
                purged = purge(RetentionRepo(session), batch, cursor)
            for removed_kind, n in purged.removed.items():
                totals[removed_kind] = totals.get(removed_kind, 0) + n
                if removed is not None:
                    removed.labels(kind=removed_kind).inc(n)
            if purged.picked < batch:  # the last batch: none of its kind is left
                break
            cursor = purged.cursor
            time.sleep(settings.manager.retention_pause_seconds)
    if totals:
        log.info("retention: removed %s", ", ".join(f"{n} {kind}" for kind, n in sorted(totals.items())))
    return totals
