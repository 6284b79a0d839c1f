"""Events: idempotent intake, and the planner's queue of events not yet processed."""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, text, update
from sqlalchemy.orm import Session

from ..models import Event

# One statement for any number of events: arrays in, duplicates (same table, instant, action,
# state; also within the batch) dropped by the unique constraint, the number stored out.
_INSERT_MANY = text("""
WITH stored AS (
    INSERT INTO events (table_id, instant, action, state, completion_time, source, write_stats, extra_metadata)
    SELECT t, i, a, s, c, src, ws::jsonb, em::jsonb
    FROM unnest(CAST(:table_ids AS bigint[]), CAST(:instants AS text[]), CAST(:actions AS text[]),
                CAST(:states AS text[]), CAST(:completion_times AS text[]), CAST(:sources AS text[]),
                CAST(:write_stats AS text[]), CAST(:extra_metadata AS text[])) AS u(t, i, a, s, c, src, ws, em)
    ON CONFLICT ON CONSTRAINT uq_events_table_id_instant_action_state DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM stored
""")


@dataclass(frozen=True)
class NewEvent:
    table_id: int
    instant: str
    action: str
    state: str  # requested | inflight | completed
    source: str  # hudi_callback | api
    completion_time: str | None = None
    write_stats: list[dict[str, Any]] | None = None
    extra_metadata: dict[str, Any] | None = None


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


class EventRepo:
    """Works on a Session, or on a Connection (`Database.autocommit()`) for the intake's single INSERT."""

    def __init__(self, session: Session | Connection):
        self.session = session

    def add_many(self, events: Sequence[NewEvent]) -> int:
        """Store the events not stored yet; returns how many were new."""
        if not events:
            return 0
        params = {
            "table_ids": [e.table_id for e in events],
            "instants": [e.instant for e in events],
            "actions": [e.action for e in events],
            "states": [e.state for e in events],
            "completion_times": [e.completion_time for e in events],
            "sources": [e.source for e in events],
            "write_stats": [_json_or_none(e.write_stats) for e in events],
            "extra_metadata": [_json_or_none(e.extra_metadata) for e in events],
        }
        return self.session.execute(_INSERT_MANY, params).scalar_one()

    def unprocessed(self, table_id: int, limit: int = 1000) -> list[Event]:
        """A table's events the planner has not processed yet, oldest first."""
        return list(self.session.scalars(
            select(Event).where(Event.table_id == table_id, Event.processed_at.is_(None))
            .order_by(Event.id).limit(limit)))

    def tables_with_unprocessed(self, limit: int = 1000) -> list[int]:
        """Tables with events waiting, longest-waiting first."""
        rows = self.session.execute(
            select(Event.table_id).where(Event.processed_at.is_(None))
            .group_by(Event.table_id).order_by(func.min(Event.id)).limit(limit))
        return [row[0] for row in rows]

    def mark_processed(self, event_ids: Iterable[int]) -> None:
        ids = list(event_ids)
        if ids:
            self.session.execute(update(Event).where(Event.id.in_(ids)).values(processed_at=func.now()),
                                 execution_options={"synchronize_session": False})

    def count(self, table_id: int | None = None) -> int:
        stmt = select(func.count()).select_from(Event)
        if table_id is not None:
            stmt = stmt.where(Event.table_id == table_id)
        return self.session.scalar(stmt) or 0
