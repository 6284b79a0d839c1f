"""An operator's request to plan a table service now (`POST /api/v1/tables/{id}:plan`), run by the service
and by the planner alike: under the table's planning lock, waiting a little for a planner that holds it."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import ConflictError, Database, TableRecord, TableRepo, TaskRecord
from tms.errors import ONE_LINE_ERRORS
from tms.hudi.storage.paths import require_under_roots
from tms.planning.decisions import PlannerOptions
from tms.planning.errors import PlanningError
from tms.table_context import table_context
from tms.table_service import TableService

from .passes import PLANNING_ERRORS, PassContext, requested_pass
from .stored_digest import store_digest, stored_digest
from .table_cache import TableCache

_LOCK_RETRY_SECONDS = 0.2


def utc_now() -> datetime:
    return datetime.now(UTC)


@contextmanager
def locked_for_planning(database: Database, table_id: int) -> Iterator[tuple[Session, TableRecord | None]]:
    """A transaction holding the table's planning lock (its row, FOR UPDATE SKIP LOCKED): the row, or None
    when another process holds it (or the table is unknown)."""
    with database.transaction() as session:
        yield session, TableRepo(session).lock_for_planning(table_id)


def planner_options(settings: Settings) -> PlannerOptions:
    """What the planner schedules (TMS_PLANNER_SERVICES, TMS_PLANNER_CLEAN_COMMITS, TMS_PLANNER_FULL_PASS_HOURS)."""
    own = settings.planner
    return PlannerOptions(services=frozenset(own.services), clean_commits=own.clean_commits,
                          storage_roots=tuple(settings.storage_roots), full_pass_hours=own.full_pass_hours,
                          context=table_context(settings))


class OnRequestPlanner:
    def __init__(self, database: Database, options: PlannerOptions, cache: TableCache,
                 clock: Callable[[], datetime] = utc_now):
        self.database = database
        self.options = options
        self.cache = cache
        self.clock = clock

    @classmethod
    def from_settings(cls, database: Database, settings: Settings, *, cached_tables: int) -> OnRequestPlanner:
        """The service's: keeps `cached_tables` loaded timelines, without a change feed."""
        options = planner_options(settings)
        return cls(database, options, TableCache(cached_tables, context=options.context))

    def close(self) -> None:
        """Close the cached tables' locks (the service stops)."""
        self.cache.close()

    def plan(self, table_id: int, service: TableService, *, wait_seconds: float = 10.0) -> list[TaskRecord]:
        """Plan `service` on one table now, whatever its trigger says (see `requested_pass`), under the
        table's planning lock, waiting up to `wait_seconds` for a planner that holds it. Returns the tasks
        recorded (none: there was nothing to plan). NotFoundError for an unknown table, ConflictError for a
        disabled one or a lock not freed in time, PlanningError when the table cannot be planned as asked
        (UnsupportedTableError: a service TMS cannot run on the table)."""
        deadline = time.monotonic() + wait_seconds
        while True:
            with locked_for_planning(self.database, table_id) as (session, row):
                if row is not None:
                    return self._plan_locked(session, row, service)
                TableRepo(session).get(table_id)  # raises NotFoundError for an unknown table
            if time.monotonic() >= deadline:
                raise ConflictError(f"table {table_id} is being planned by another process; try again")
            time.sleep(_LOCK_RETRY_SECONDS)

    def _plan_locked(self, session: Session, row: TableRecord, service: TableService) -> list[TaskRecord]:
        if not row.enabled:
            raise ConflictError(f"table {row.id} is disabled: enable it before planning it")
        try:
            require_under_roots(row.base_path, self.options.storage_roots)
            cached = self.cache.with_current_properties(row)
            policy = row.policy
            ctx = PassContext(session, row, cached.table, policy, self.clock(), self.options.services_for(policy),
                              cached.transactions, self.options.full_pass_every)
            digest, recorded = requested_pass(ctx, stored_digest(row, self.options), service)
        except PLANNING_ERRORS as e:
            self.cache.forget(row.id)
            if isinstance(e, ONE_LINE_ERRORS):
                raise
            raise PlanningError(f"cannot plan {row.base_path}: {e}") from e
        tables = TableRepo(session)
        tables.mark_planned(row.id, ctx.now)
        store_digest(tables, row, digest, self.options, ctx.now)
        return recorded
