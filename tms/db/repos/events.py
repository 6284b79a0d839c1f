"""Events: idempotent intake, and the planner's queue of events not yet processed."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from pydantic_core import to_json
from sqlalchemy import Connection, func, select, update
from sqlalchemy.orm import Session

from ..models import Event
from ..records import EventRecord, records_of

# One statement for any number of events: a JSON array in (one parameter, cheap to send),
# duplicates (same table, instant, action, state; also within the array) dropped by the unique
# constraint, the keys of the rows stored out. In the driver's parameter style: run by SQLAlchemy
# (exec_driver_sql) and by the async intake alike.
INSERT_EVENTS_SQL = """
INSERT INTO events (table_id, instant, action, state, completion_time, source, write_stats, extra_metadata)
SELECT table_id, instant, action, state, completion_time, source, write_stats, extra_metadata
FROM jsonb_to_recordset(%(events)s::jsonb) AS e(table_id bigint, instant text, action text, state text,
                                              completion_time text, source text, write_stats jsonb,
                                              extra_metadata jsonb)
ON CONFLICT ON CONSTRAINT uq_events_table_id_instant_action_state DO NOTHING
RETURNING table_id, instant, action, state
"""
# The same, answering only how many were new (one row instead of one per new event).
COUNT_INSERTED_EVENTS_SQL = f"WITH inserted AS ({INSERT_EVENTS_SQL}) SELECT count(*) FROM inserted"


class NewEvent(NamedTuple):
    """An event to store; `key` is what makes it unique. (A tuple: a batch makes thousands of them.)"""

    table_id: int
    instant: str
    action: str
    state: str  # requested | inflight | completed
    source: str  # hudi_callback | api
    completion_time: str | None = None
    write_stats: list[dict[str, Any]] | None = None
    extra_metadata: dict[str, Any] | None = None

    @property
    def key(self) -> tuple[int, str, str, str]:
        return self.table_id, self.instant, self.action, self.state


def insert_params(events: Sequence[NewEvent]) -> dict[str, str]:
    """INSERT_EVENTS_SQL's parameter."""
    return {"events": to_json([e._asdict() for e in events]).decode()}  # pydantic's serializer: Rust, fast


class EventRepo:
    """Works on a Session, or on a Connection (`Database.autocommit()`: one round trip per insert).
    The service's intake uses the async twin, `tms.db.intake.IntakeStore`."""

    def __init__(self, session: Session | Connection):
        self.session = session

    def add_many(self, events: Sequence[NewEvent]) -> int:
        """Store the events not stored yet; returns how many were new."""
        if not events:
            return 0
        connection = self.session.connection() if isinstance(self.session, Session) else self.session
        return len(connection.exec_driver_sql(INSERT_EVENTS_SQL, insert_params(events)).all())

    def unprocessed(self, table_id: int, limit: int = 1000) -> list[EventRecord]:
        """A table's events the planner has not processed yet, oldest first."""
        return records_of(EventRecord, self.session.scalars(
            select(Event).where(Event.table_id == table_id, Event.processed_at.is_(None))
            .order_by(Event.id).limit(limit)))

    def unprocessed_of(self, table_ids: list[int]) -> dict[int, list[EventRecord]]:
        """The unprocessed events of these tables, oldest first, by table."""
        out: dict[int, list[EventRecord]] = {}
        for e in self.session.scalars(select(Event).where(Event.table_id.in_(table_ids), Event.processed_at.is_(None))
                                      .order_by(Event.table_id, Event.id)):
            out.setdefault(e.table_id, []).append(EventRecord.of(e))
        return out

    def tables_with_unprocessed(self, limit: int = 1000) -> list[int]:
        """Tables with events waiting, longest-waiting first."""
        rows = self.session.execute(
            select(Event.table_id).where(Event.processed_at.is_(None))
            .group_by(Event.table_id).order_by(func.min(Event.id)).limit(limit))
        return [row[0] for row in rows]

    def mark_processed(self, event_ids: Iterable[int]) -> None:
        ids = list(event_ids)
        if ids:  # the clock's time, not the transaction's start: when the planner had decided
            self.session.execute(update(Event).where(Event.id.in_(ids)).values(processed_at=func.clock_timestamp()),
                                 execution_options={"synchronize_session": False})

    def last_received_at(self, table_id: int) -> datetime | None:
        """When the table's writers last sent an event TMS had not stored yet (a commit callback or POST
        /api/v1/events); None: never (the planner learns of its commits only by reading its timeline)."""
        return self.session.scalar(select(func.max(Event.received_at)).where(Event.table_id == table_id))

    def count(self, table_id: int | None = None) -> int:
        stmt = select(func.count()).select_from(Event)
        if table_id is not None:
            stmt = stmt.where(Event.table_id == table_id)
        return self.session.scalar(stmt) or 0
