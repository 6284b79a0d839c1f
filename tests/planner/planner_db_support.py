"""Helpers of the planner's service-side tests: registered tables written by the writer, events as the
intake stores them, a clock the test moves, and what the database recorded."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from planning_support import ModelledTable

from planner.runner import Planner
from service.table_view import registration_facts
from tms.db import Database, EventRecord, EventRepo, NewEvent, TableRepo, TaskRecord, TaskRepo
from tms.planning.decisions import PlannerOptions

ALL_SERVICES = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=1000)


class Clock:
    """The planner's `now`, moved by the test."""

    def __init__(self):
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, **delta) -> None:
        self.offset += timedelta(**delta)


class TrackedTable(ModelledTable):
    """A table written by the writer and registered with TMS; `write` and `complete` report events as a
    writer's callbacks would (unless told not to: a lost callback)."""

    def __init__(self, db: Database, path: Path, *, policies: dict | None = None, priority: int = 0,
                 queue: str | None = None, **table_options):
        super().__init__(path, **table_options)
        self.db = db
        with db.transaction() as session:
            self.id = TableRepo(session).register(base_path=str(path), policies=policies or {}, priority=priority,
                                                  queue=queue, **registration_facts(self.table())).id

    def write(self, records, op: str = "upsert", *, leave_inflight: bool = False, report: bool = True) -> str:
        instant = super().write(records, op, leave_inflight=leave_inflight)
        if report:
            self.report(instant, "inflight" if leave_inflight else "completed")
        return instant

    def complete(self, instant: str, *, report: bool = True) -> None:
        super().complete(instant)
        if report:
            self.report(instant, "completed")

    def report(self, instant: str, state: str, action: str = "deltacommit") -> None:
        with self.db.transaction() as session:
            EventRepo(session).add_many([NewEvent(self.id, instant, action, state, "api")])

    def tasks(self) -> list[TaskRecord]:
        with self.db.transaction() as session:
            return sorted(TaskRepo(session).find(table_id=self.id, limit=1000)[0], key=lambda t: t.id)

    def unprocessed(self) -> list[EventRecord]:
        with self.db.transaction() as session:
            return EventRepo(session).unprocessed(self.id)


def planner(db: Database, clock: Clock | None = None, options: PlannerOptions = ALL_SERVICES) -> Planner:
    return Planner(db, options, clock=clock or Clock())


def pending_plans(table) -> list[tuple[str, str]]:
    """(instant, action) of the requested plans on a table's timeline."""
    tl = table.timeline
    tl.reload()
    return [(i.timestamp, i.action) for i in tl.pending(("compaction", "clustering", "replacecommit", "clean",
                                                         "rollback"))]
