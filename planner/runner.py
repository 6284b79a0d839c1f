"""The planner's three ways into a table: its new events, the periodic trigger and the reconciliation
scan. Each takes the table's planning lock (its row, FOR UPDATE SKIP LOCKED) for one transaction, so one
process plans a table at a time and planners on many machines share the tables; a table locked
elsewhere is skipped, its planner is at work on it.

Handling events reads the table row and its events only; the timeline is reloaded by a planning pass,
which runs when the digest says a plan may be due (see digest and decisions)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import AlertRepo, Database, EventRepo, RegisteredTable, TablePolicy, TableRepo, Task
from tms.hudi.errors import TableNotFoundError
from tms.hudi.table import PROPERTIES
from tms.hudi.timeline_watch import TimelineWatcher
from tms.plan_pass.on_request import OnRequestPlanner, locked_for_planning, planner_options, utc_now
from tms.plan_pass.passes import PLANNING_ERRORS, PassContext, planning_pass
from tms.plan_pass.table_cache import TableCache
from tms.planning import decisions
from tms.planning.decisions import PlannerOptions, Work
from tms.planning.digest import TimelineDigest
from tms.table_service import TableService

log = logging.getLogger(__name__)

EVENTS_PER_PASS = 1000
_PAGE = 500


class Planner:
    def __init__(self, database: Database, options: PlannerOptions, *, cached_tables: int = 10_000,
                 watch_timelines: bool = True, clock: Callable[[], datetime] = utc_now):
        self.database = database
        self.options = options
        self.cache = TableCache(cached_tables, TimelineWatcher() if watch_timelines else None)
        self.clock = clock
        self.on_request = OnRequestPlanner(database, options, self.cache, clock)
        self._stopping = threading.Event()

    @classmethod
    def from_settings(cls, database: Database, settings: Settings, **kwargs) -> Planner:
        return cls(database, planner_options(settings), **{"cached_tables": settings.planner_cached_tables,
                                                           "watch_timelines": settings.planner_watch_timelines,
                                                           **kwargs})

    def stop(self) -> None:
        """Make a running periodic trigger or scan stop after the table at hand."""
        self._stopping.set()

    def drain_timeline_changes(self) -> None:
        """Take the kernel's queued changes of the watched timelines, so its queue does not overflow while
        no pass takes them (called from the planner's loop)."""
        if self.cache.watcher is not None:
            self.cache.watcher.drain_now()

    def close(self) -> None:
        """Close the cached tables' locks and stop watching their timelines (after the last pass)."""
        self.cache.close()
        if self.cache.watcher is not None:
            self.cache.watcher.close()

    # --- the event-driven path ----------------------------------------------------------------------
    def tables_with_events(self, limit: int = 1000) -> list[int]:
        with self.database.transaction() as session:
            return EventRepo(session).tables_with_unprocessed(limit)

    def handle_events(self, table_id: int) -> bool:
        """Process the table's unprocessed events, planning what they made due. False if another planner
        holds the table."""
        with self._locked(table_id) as (session, row):
            if row is None:
                return False
            events = EventRepo(session).unprocessed(table_id, EVENTS_PER_PASS)
            log.debug("table %s: %s event(s)", table_id, len(events))
            if events and row.enabled:
                self._guarded(session, row, lambda ctx: self._on_events(ctx, events))
            elif events:  # a disabled table: once enabled again, its first event reconciles it
                row.planner_state = {}
            EventRepo(session).mark_processed(e.id for e in events)  # hints: taken into account, or moot
            return True

    def _on_events(self, ctx: PassContext, events) -> None:
        digest = self._digest(ctx.row)
        if digest is None:  # first sight: nothing is known of the timeline yet
            self._reconcile(ctx)
            return
        for event in events:
            digest.observe(event.instant, event.action, event.state, ctx.now)
        work = decisions.on_events(digest, events, ctx.policy, ctx.now, self.options, is_mor=ctx.table.config.is_mor)
        self._run(ctx, digest, work)

    # --- the periodic trigger -----------------------------------------------------------------------
    def tick(self) -> int:
        """Plan what time alone made due, on every enabled table whose digest says so. Returns the
        number of tasks recorded."""
        return self._tick_rows(self._enabled_tables())

    def tick_tables(self, table_ids: list[int]) -> int:
        """The periodic trigger on these tables only (those the manager's leader asked for)."""
        with self.database.transaction() as session:
            rows = [row for t in table_ids if (row := session.get(RegisteredTable, t)) is not None and row.enabled]
        return self._tick_rows(rows)

    def _tick_rows(self, rows: list[RegisteredTable]) -> int:
        now = self.clock()
        recorded = 0
        for row in rows:
            if self._stopping.is_set():
                break
            digest = self._digest(row)
            if digest is None:  # never seen: the scan reconciles it
                continue
            if not decisions.on_tick(digest, TablePolicy.from_stored(row.policies), now, self.options,
                                     is_mor=row.table_type == "MERGE_ON_READ"):
                continue
            with self._locked(row.id) as (session, locked):
                if locked is not None and locked.enabled:
                    recorded += self._guarded(session, locked, self._on_tick) or 0
        return recorded

    def _on_tick(self, ctx: PassContext) -> int:
        digest = self._digest(ctx.row)  # as the last lock holder left it
        if digest is None:
            return 0
        work = decisions.on_tick(digest, ctx.policy, ctx.now, self.options, is_mor=ctx.table.config.is_mor)
        return len(self._run(ctx, digest, work))

    # --- the reconciliation scan --------------------------------------------------------------------
    def scan(self, *, fresh_seconds: float = 0.0) -> int:
        """Reconcile every enabled table with its timeline, except those reconciled less than
        `fresh_seconds` ago (by another planner). Returns the number of tables reconciled."""
        now = self.clock().timestamp()
        reconciled = 0
        for row in self._enabled_tables():
            if self._stopping.is_set():
                break
            digest = self._digest(row)
            if digest is not None and digest.scanned_at is not None and now - digest.scanned_at < fresh_seconds:
                continue
            reconciled += self.reconcile(row.id)
        return reconciled

    def reconcile(self, table_id: int) -> bool:
        """Reconcile one table now: rebuild its digest from the timeline, adopt, sync, and plan what is
        due. False if another planner holds it, or it is disabled."""
        with self._locked(table_id) as (session, row):
            if row is None or not row.enabled:
                return False
            self._guarded(session, row, self._reconcile)
            return True

    def _reconcile(self, ctx: PassContext) -> None:
        # The safety net: the table is still there (a listing of a removed folder is merely empty) and its
        # timeline is listed, whatever the change feed says.
        if not ctx.table.storage.exists(PROPERTIES):
            raise TableNotFoundError(f"no Hudi table at {ctx.row.base_path} any more: {PROPERTIES} not found")
        ctx.table.timeline.reload(full=True)
        AlertRepo(ctx.session).resolve(_unreadable(ctx.row.id))  # it was read now
        digest = TimelineDigest.of(ctx.table, self._digest(ctx.row), ctx.now, self.options.services)
        digest.scanned_at = ctx.now.timestamp()
        work = decisions.on_scan(digest, ctx.policy, ctx.now, self.options, is_mor=ctx.table.config.is_mor)
        self._run(ctx, digest, work)

    # --- an operator's request -----------------------------------------------------------------------
    def plan_on_request(self, table_id: int, service: TableService, *, wait_seconds: float = 10.0) -> list[Task]:
        """Plan `service` on one table now (see OnRequestPlanner.plan)."""
        return self.on_request.plan(table_id, service, wait_seconds=wait_seconds)

    # --- shared -------------------------------------------------------------------------------------
    def _run(self, ctx: PassContext, digest: TimelineDigest, work: Work) -> list[Task]:
        """Run the planning pass `work` asks for (if any), then store the table's digest. Returns the
        tasks recorded."""
        recorded: list[Task] = []
        if work:
            cached = self.cache.with_current_properties(ctx.row)
            ctx.table, ctx.transactions = cached.table, cached.transactions
            digest, recorded = planning_pass(ctx, digest, work)
            ctx.row.planned_at = ctx.now
        ctx.row.planner_state = digest.to_state()
        return recorded

    def _digest(self, row: RegisteredTable) -> TimelineDigest | None:
        return TimelineDigest.from_state(row.planner_state, self.options.services)

    def _locked(self, table_id: int) -> AbstractContextManager[tuple[Session, RegisteredTable | None]]:
        return locked_for_planning(self.database, table_id)

    def _guarded(self, session: Session, row: RegisteredTable, run: Callable[[PassContext], object]):
        """Run `run` on the locked table. A table that cannot be read (gone, storage down, broken
        metadata) raises an alert and gives None; the tasks recorded before the failure stay (each has
        its plan on the timeline), and so does the table's digest — the next pass catches up."""
        try:
            cached = self.cache.get(row)
            ctx = PassContext(session, row, cached.table, TablePolicy.from_stored(row.policies), self.clock(),
                              self.options.services, cached.transactions)
            return run(ctx)
        except PLANNING_ERRORS as e:  # not the database's: the transaction goes on
            self.cache.forget(row.id)
            log.warning("table %s (%s) cannot be planned: %s", row.id, row.base_path, e)
            AlertRepo(session).raise_alert(kind="table_unreadable", severity="warning",
                                           message=f"cannot plan {row.base_path}: {e}",
                                           fingerprint=_unreadable(row.id), table_id=row.id)
            return None

    def _enabled_tables(self) -> list[RegisteredTable]:
        rows: list[RegisteredTable] = []
        with self.database.transaction() as session:
            repo = TableRepo(session)
            while True:
                page, _ = repo.find(enabled=True, limit=_PAGE, offset=len(rows))
                rows += page
                if len(page) < _PAGE:
                    return rows


def _unreadable(table_id: int) -> str:
    """The fingerprint of a table's `table_unreadable` alert."""
    return f"table_unreadable:{table_id}"
