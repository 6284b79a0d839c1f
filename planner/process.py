"""The planner process (`tms planner`): a dispatcher hands the tables with new events to a pool of
threads; the periodic trigger and the reconciliation scan are decided by the manager's leader, which marks
the tables the trigger is due on and asks for a scan in chunks of table ids; every planner takes marked
tables and chunks (SKIP LOCKED), so a scan of many tables is shared.

With no live leader (no manager runs), each planner runs both periodic jobs itself, as APScheduler jobs
(the trigger over the tables it is due on, the scan over every table): the table lock and idempotent
planning make that safe, only less shared."""
from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial

from apscheduler.schedulers.background import BackgroundScheduler

from tms.config import Settings
from tms.db import Database, LeaseRepo, ScanRequestRepo, TableRepo
from tms.instance import RoleLoop
from tms.leadership import LEASE_NAME

from .runner import Planner

log = logging.getLogger(__name__)

ROLE = "planner"
# A scan skips the tables another planner reconciled within this share of the scan interval.
FRESH_SHARE = 0.9
REQUESTS_POLL_SECONDS = 1.0  # how often a planner takes the tables the manager's leader marked due
REQUESTS_PER_TAKE = 500  # marked tables a planner takes at once: one transaction, one query for their rows
EVENT_TABLES_PER_THREAD = 100  # tables with events one thread takes at once (their digests in one transaction)



class PlannerService:
    def __init__(self, database: Database, settings: Settings, planner: Planner | None = None):
        self.database = database
        self.settings = settings
        self.planner = planner or Planner.from_settings(database, settings)
        self.loop = RoleLoop(database, [ROLE], heartbeat_seconds=settings.heartbeat_seconds,
                             poll_seconds=settings.planner.poll_seconds)
        self.id = self.loop.id
        self._in_flight: set[int] = set()  # tables handed to threads
        self._jobs = 0  # shares of them in the threads' hands
        self._backoff: dict[int, float] = {}  # table -> monotonic time before which it is not tried again
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(settings.planner.threads, thread_name_prefix="plan")  # threads on demand

    # --- lifecycle ----------------------------------------------------------------------------------
    def run(self) -> None:
        """Plan until `stop()`."""
        s = self.settings.planner
        scheduler = BackgroundScheduler(timezone=UTC)
        scheduler.add_job(self._tick, "interval", seconds=s.tick_seconds, max_instances=1, coalesce=True)
        # The first scan at once: it catches up on whatever happened while no planner ran.
        scheduler.add_job(self._scan, "interval", seconds=s.scan_seconds, max_instances=1, coalesce=True,
                          next_run_time=datetime.now(UTC))
        scheduler.add_job(self._take_requests, "interval", seconds=REQUESTS_POLL_SECONDS, max_instances=1,
                          coalesce=True)
        scheduler.start()
        log.info("planner %s: %s thread(s), services %s, tick %ss, scan %ss", self.id, s.threads,
                 ",".join(s.services), s.tick_seconds, s.scan_seconds)

        def finish() -> None:
            scheduler.shutdown(wait=True)
            self._pool.shutdown(wait=True)
            self.planner.close()

        self.loop.run(self, finish=finish)

    def stop(self) -> None:
        self.loop.stop()
        self.planner.stop()

    def turn(self) -> float | None:
        """Take the timelines' changes and hand tables with new events to free threads: again at once when
        some were handed, else at the poll interval or a wake-up."""
        self.planner.drain_timeline_changes()
        return 0 if self._dispatch() else None

    def facts(self) -> dict[str, int]:
        return {"threads": self.settings.planner.threads}

    # --- the event-driven path ----------------------------------------------------------------------
    def _dispatch(self) -> int:
        """Hand tables with new events to free threads; how many were handed."""
        with self._lock:
            free = self.settings.planner.threads - self._jobs
            busy = set(self._in_flight)
            now = time.monotonic()
            busy |= {t for t, until in self._backoff.items() if until > now}
        if free <= 0:
            return 0
        try:
            waiting = self.planner.tables_with_events(limit=EVENT_TABLES_PER_THREAD * free + len(busy))
        except Exception:  # a database outage: try again after the poll interval
            log.exception("planner %s: cannot read the event queue", self.id)
            return 0
        candidates = [t for t in waiting if t not in busy]
        random.shuffle(candidates)  # planners on other machines read the same queue: spread the collisions
        # Spread over the free threads, each taking its share in one transaction.
        shares = [candidates[i::free] for i in range(min(free, len(candidates)))]
        for share in shares:
            with self._lock:
                self._in_flight.update(share)
                self._jobs += 1
            self._pool.submit(self.planner.handle_events_of, share).add_done_callback(partial(self._done, share))
        return len(shares)

    def _done(self, table_ids: list[int], future: Future) -> None:
        try:
            handled = set(future.result())
        except Exception:
            log.exception("planner %s: tables %s failed", self.id, table_ids)
            handled = set()
        with self._lock:
            self._jobs -= 1
            for table_id in table_ids:
                self._in_flight.discard(table_id)
                if table_id in handled:
                    self._backoff.pop(table_id, None)
                else:  # another planner holds it, or the database failed: not again before the next poll
                    self._backoff[table_id] = time.monotonic() + self.settings.planner.poll_seconds
        self.loop.wake()

    # --- the periodic jobs --------------------------------------------------------------------------
    def _leader_decides(self) -> bool:
        """True while a manager holds the leader lease: it asks for the periodic work."""
        try:
            with self.database.transaction() as session:
                lease = LeaseRepo(session).get(LEASE_NAME)
                return lease is not None and lease.holder is not None and lease.expires_at is not None \
                    and lease.expires_at > datetime.now(UTC)
        except Exception:  # the database is down: so is planning
            return True

    def _take_requests(self) -> None:
        """Plan the tables the leader marked due for the periodic trigger, and scan the chunks of tables it
        asked a scan of."""
        try:
            while not self.loop.stopping:
                with self.database.transaction() as session:
                    ticks = TableRepo(session).take_tick_requests(REQUESTS_PER_TAKE)
                    chunk = ScanRequestRepo(session).take()
                if not ticks and not chunk:
                    return
                planned = self.planner.tick_tables(ticks) if ticks else 0
                reconciled = self.planner.scan_range(*chunk) if chunk else 0
                if planned or reconciled:
                    log.info("planner %s: asked by the leader: %s task(s) on the trigger, %s table(s) of ids %s "
                             "changed and reconciled", self.id, planned, reconciled,
                             "-".join(map(str, chunk)) if chunk else "none")
        except Exception:
            log.exception("planner %s: the leader's requests failed", self.id)

    def _tick(self) -> None:
        if self._leader_decides():
            return
        try:
            planned = self.planner.tick()
            if planned:
                log.info("planner %s: periodic trigger recorded %s task(s)", self.id, planned)
        except Exception:
            log.exception("planner %s: periodic trigger failed", self.id)

    def _scan(self) -> None:
        if self._leader_decides():
            return
        try:
            started = time.monotonic()
            count = self.planner.scan(fresh_seconds=FRESH_SHARE * self.settings.planner.scan_seconds)
            log.info("planner %s: reconciled %s table(s) in %.1f s", self.id, count, time.monotonic() - started)
        except Exception:
            log.exception("planner %s: reconciliation scan failed", self.id)

