"""The planner's three ways into a table: its new events, the periodic trigger and the reconciliation
scan. Each takes the table's planning lock (its row, FOR UPDATE SKIP LOCKED) for one transaction, so one
process plans a table at a time and planners on many machines share the tables; a table locked
elsewhere is skipped, its planner is at work on it.

Handling events reads the table row and its events only; the timeline is reloaded by a planning pass,
which runs when the digest says a plan may be due (see digest and decisions)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import AlertRepo, Database, EventRepo, TablePolicy, TableRecord, TableRepo, TaskRecord, TaskRepo, TaskState
from tms.hudi.errors import TableNotFoundError
from tms.hudi.storage.paths import require_under_roots
from tms.hudi.table.hudi_table import PROPERTIES
from tms.hudi.timeline.stamp import timeline_stamp, unchanged_since
from tms.hudi.timeline.watch import TimelineWatcher
from tms.plan_pass.damage import check_damaged_files
from tms.plan_pass.on_request import OnRequestPlanner, locked_for_planning, planner_options, utc_now
from tms.plan_pass.passes import PLANNING_ERRORS, PassContext, planning_pass
from tms.plan_pass.stored_digest import store_digest, stored_digest, tick_due_at
from tms.plan_pass.table_cache import TableCache
from tms.planning import decisions
from tms.planning.decisions import PlannerOptions, Work
from tms.planning.digest import TimelineDigest

log = logging.getLogger(__name__)

EVENTS_PER_PASS = 1000
_PAGE = 500


class Planner:
    def __init__(self, database: Database, options: PlannerOptions, *, cached_tables: int = 10_000,
                 cache_bytes: int | None = None, watch_timelines: bool = True, clock: Callable[[], datetime] = utc_now):
        self.database = database
        self.options = options
        self.cache = TableCache(cached_tables, TimelineWatcher() if watch_timelines else None, max_bytes=cache_bytes,
                                context=options.context)
        self.clock = clock
        self.on_request = OnRequestPlanner(database, options, self.cache, clock)
        self._stopping = threading.Event()

    @classmethod
    def from_settings(cls, database: Database, settings: Settings, **kwargs) -> Planner:
        own = settings.planner
        return cls(database, planner_options(settings), **{"cached_tables": own.cached_tables,
                                                           "cache_bytes": own.cache_mb * 2**20,
                                                           "watch_timelines": own.watch_timelines, **kwargs})

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
                store_digest(TableRepo(session), row, None, self.options)
            EventRepo(session).mark_processed(e.id for e in events)  # hints: taken into account, or moot
            return True

    def handle_events_of(self, table_ids: list[int]) -> list[int]:
        """Process the unprocessed events of many tables; returns those handled (the others another planner
        holds). The common case — events that make nothing due, a digest update — is decided for all of them
        in one transaction, without loading any table; a table whose events may make a plan due, that was
        never read, or has a long backlog, then goes through `handle_events` on its own."""
        handled: list[int] = []
        alone: list[int] = []
        with self.database.transaction() as session:
            tables = TableRepo(session)
            rows = tables.lock_many_for_planning(table_ids)
            events_of = EventRepo(session).unprocessed_of([row.id for row in rows])
            now = self.clock()
            done = []
            for row in rows:
                events = events_of.get(row.id, [])
                try:
                    digest_only = not row.enabled or self._digest_only(tables, row, events, now)
                except Exception:  # a bad event or policy: the table fails on its own, not its share
                    log.exception("table %s: its events cannot be taken together", row.id)
                    digest_only = False
                if not digest_only:
                    alone.append(row.id)
                    continue
                if not row.enabled and events:  # as handle_events: reconciled once enabled again
                    store_digest(tables, row, None, self.options)
                log.debug("table %s: %s event(s)", row.id, len(events))
                done += events
                handled.append(row.id)
            EventRepo(session).mark_processed(e.id for e in done)
        handled += [t for t in alone if self.handle_events(t)]
        return handled

    def _digest_only(self, tables: TableRepo, row: TableRecord, events: list, now: datetime) -> bool:
        """Take `events` into the locked table's digest if that is all they call for (nothing may be due);
        False, the row unchanged, if a planning pass or a reconciliation is needed."""
        digest = self._digest(row)
        if digest is None or len(events) >= EVENTS_PER_PASS:
            return False
        for event in events:
            digest.observe(event.instant, event.action, event.state, now)
        _release_archival(tables.session, row.id, digest)
        work = decisions.on_events(digest, events, row.policy, now, self.options, is_mor=row.is_mor)
        if work:
            return False
        store_digest(tables, row, digest, self.options, now)
        return True

    def _on_events(self, ctx: PassContext, events) -> None:
        digest = self._digest(ctx.row)
        if digest is None:  # first sight: nothing is known of the timeline yet
            self._reconcile(ctx)
            return
        for event in events:
            digest.observe(event.instant, event.action, event.state, ctx.now)
        _release_archival(ctx.session, ctx.row.id, digest)
        work = decisions.on_events(digest, events, ctx.policy, ctx.now, self.options, is_mor=ctx.table.config.is_mor)
        self._run(ctx, digest, work)

    # --- the periodic trigger -----------------------------------------------------------------------
    def tick(self) -> int:
        """Plan what time alone made due, on the enabled tables whose `tick_due_at` passed (a range of its
        index, not every table), in pages by (time, id). Returns the number of tasks recorded."""
        now = self.clock()
        recorded = 0
        after: tuple[datetime, int] | None = None
        while not self._stopping.is_set():
            with self.database.transaction() as session:
                page = TableRepo(session).tick_due_page(now, after, _PAGE)
            if not page:
                break
            recorded += self._tick_rows(page)
            after = (page[-1].tick_due_at, page[-1].id)
        return recorded

    def tick_tables(self, table_ids: list[int]) -> int:
        """The periodic trigger on these tables only (those the manager's leader asked for)."""
        with self.database.transaction() as session:
            rows = TableRepo(session).tick_rows(table_ids)
        return self._tick_rows(rows)

    def _tick_rows(self, rows: list[Any]) -> int:
        """`rows`: TableRepo.tick_rows of tables; the table is locked (and read whole) only if time made work due.
        The others get their `tick_due_at` rewritten from their digest (a policy changed, or the migration
        asked for a look), so the trigger does not come back to them before it is due."""
        now = self.clock()
        recorded = 0
        not_due = []
        for row in rows:
            if self._stopping.is_set():
                break
            digest = self._digest(row)
            if digest is None or not decisions.on_tick(digest, TablePolicy.from_stored(row.policies), now,
                                                       self.options, is_mor=row.table_type == "MERGE_ON_READ"):
                not_due.append(row.id)  # no digest: never read, the scan reconciles it
                continue
            with self._locked(row.id) as (session, locked):
                if locked is not None and locked.enabled:
                    recorded += self._guarded(session, locked, self._on_tick) or 0
        if not_due:
            self._retime(not_due)
        return recorded

    def _retime(self, table_ids: list[int]) -> None:
        """Rewrite the tables' `tick_due_at` from the digest each holds now, under their planning lock: a
        table another planner holds is skipped (SKIP LOCKED), its pass stores the time with its digest."""
        with self.database.transaction() as session:
            tables = TableRepo(session)
            for row in tables.lock_many_for_planning(table_ids):
                due_at = tick_due_at(row, self._digest(row), self.options)
                if row.tick_due_at != due_at:
                    tables.store_tick_due(row.id, due_at)

    def _on_tick(self, ctx: PassContext) -> int:
        digest = self._digest(ctx.row)  # as the last lock holder left it
        if digest is None:
            return 0
        work = decisions.on_tick(digest, ctx.policy, ctx.now, self.options, is_mor=ctx.table.config.is_mor)
        return len(self._run(ctx, digest, work))

    # --- the reconciliation scan --------------------------------------------------------------------
    def scan(self, *, fresh_seconds: float = 0.0) -> int:
        """Reconcile every enabled table whose timeline changed since it was last read whole (see
        `timeline_stamp`), except those reconciled less than `fresh_seconds` ago (by another planner).
        Returns the number of tables reconciled."""
        now = self.clock().timestamp()
        reconciled = 0
        for rows in self._enabled_pages():
            for table_id, base_path, stamp, scanned_at in rows:
                if self._stopping.is_set():
                    return reconciled
                if scanned_at is not None and now - scanned_at < fresh_seconds:
                    continue
                if not unchanged_since(base_path, stamp, self.options.context):
                    reconciled += self.reconcile(table_id)
        return reconciled

    def scan_range(self, first_id: int, last_id: int) -> int:
        """The reconciliation scan on the enabled tables with ids from `first_id` to `last_id` (a chunk the
        manager's leader asked for): those whose timeline changed are reconciled. Returns their number."""
        reconciled = 0
        for rows in self._enabled_pages(ids=(first_id, last_id)):
            for table_id, base_path, stamp, _ in rows:
                if self._stopping.is_set():
                    return reconciled
                if not unchanged_since(base_path, stamp, self.options.context):
                    reconciled += self.reconcile(table_id)
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
        tables = TableRepo(ctx.session)
        tables.store_timeline_stamp(ctx.row.id, None)  # until this reading succeeds
        stamp = timeline_stamp(ctx.table.storage, ctx.table.config.timeline_dir)  # before the listing
        ctx.table.timeline.reload(full=True)
        ctx.table.timeline.check_latest_write()  # a truncated latest commit is table_unreadable, naming its file
        AlertRepo(ctx.session).resolve(_unreadable(ctx.row.id))  # it was read now
        digest = TimelineDigest.of(ctx.table, self._digest(ctx.row), ctx.now, ctx.services)
        digest.scanned_at = ctx.now.timestamp()
        work = decisions.on_scan(digest, ctx.policy, ctx.now, self.options, is_mor=ctx.table.config.is_mor)
        if not work:  # a planning pass looks for lost files itself
            check_damaged_files(ctx.session, ctx.row.id, ctx.row.base_path, ctx.table)
        self._run(ctx, digest, work)
        tables.store_timeline_stamp(ctx.row.id, stamp)

    # --- shared -------------------------------------------------------------------------------------
    def _run(self, ctx: PassContext, digest: TimelineDigest, work: Work) -> list[TaskRecord]:
        """Run the planning pass `work` asks for (if any), then store the table's digest. Returns the
        tasks recorded."""
        recorded: list[TaskRecord] = []
        if work:
            cached = self.cache.with_current_properties(ctx.row)
            ctx.table, ctx.transactions = cached.table, cached.transactions
            digest, recorded = planning_pass(ctx, digest, work)
            TableRepo(ctx.session).mark_planned(ctx.row.id, ctx.now)
        store_digest(TableRepo(ctx.session), ctx.row, digest, self.options, ctx.now)
        return recorded

    def _digest(self, row: TableRecord) -> TimelineDigest | None:
        return stored_digest(row, self.options)

    def _locked(self, table_id: int) -> AbstractContextManager[tuple[Session, TableRecord | None]]:
        return locked_for_planning(self.database, table_id)

    def _guarded(self, session: Session, row: TableRecord, run: Callable[[PassContext], object]):
        """Run `run` on the locked table. A table that cannot be read (gone, storage down, broken
        metadata) raises an alert and gives None; the tasks recorded before the failure stay (each has
        its plan on the timeline), and so does the table's digest — the next pass catches up."""
        try:
            require_under_roots(row.base_path, self.options.storage_roots)
            cached = self.cache.get(row)
            policy = row.policy
            ctx = PassContext(session, row, cached.table, policy, self.clock(), self.options.services_for(policy),
                              cached.transactions, self.options.full_pass_every)
            result = run(ctx)
            self.cache.measure(row.id)
            return result
        except PLANNING_ERRORS as e:  # not the database's: the transaction goes on
            self.cache.forget(row.id)
            log.warning("table %s (%s) cannot be planned: %s", row.id, row.base_path, e)
            AlertRepo(session).raise_alert(kind="table_unreadable", severity="warning",
                                           message=f"cannot plan {row.base_path}: {e}",
                                           fingerprint=_unreadable(row.id), table_id=row.id)
            return None

    def _enabled_pages(self, *, ids: tuple[int, int] | None = None) -> Iterator[list[Any]]:
        """The enabled tables' (id, base path, timeline stamp, scanned at), a page at a time by id: each page is
        one index probe, and only one is held."""
        after = 0
        while True:
            with self.database.transaction() as session:
                page = TableRepo(session).stamps_page(after, _PAGE, ids=ids)
            if not page:
                return
            yield page
            after = page[-1].id


def _unreadable(table_id: int) -> str:
    """The fingerprint of a table's `table_unreadable` alert."""
    return f"table_unreadable:{table_id}"


def _release_archival(session: Session, table_id: int, digest: TimelineDigest) -> None:
    """The plan that held archival back completed if TMS's task of it succeeded: TMS's own commits post no
    writer's callback, and the next pass that reads the timeline may be many commits away."""
    held = digest.archive_held_by
    if held is not None:
        task = TaskRepo(session).for_instant(table_id, held)
        if task is not None and task.state == TaskState.SUCCEEDED:
            digest.released(held)
