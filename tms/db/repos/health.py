"""Tables' health scores: the last one of each table (`table_health`), recorded by the manager's leader and read
by the fleet view, and every score as a sample (`health_samples`) for the trend charts of backlog over time."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import distinct_on, insert
from sqlalchemy.orm import Session

from ..models import HealthRecord, HealthSample, RegisteredTable
from ..records import HealthSampleRecord, HealthScore, TableRecord, maybe_of, records_of


@dataclass(frozen=True)
class FleetHour:
    """The fleet in one hour, each table as its last sample in that hour showed it."""
    hour: datetime
    tables_by_status: dict[str, int]
    log_bytes: int
    log_files: int


class HealthRepo:
    def __init__(self, session: Session):
        self.session = session

    def record(self, table_id: int, *, score: int, status: str, reasons: Sequence[dict[str, Any]],
               checked_at: datetime | None = None) -> None:
        values = {"score": score, "status": status, "reasons": list(reasons),
                  "checked_at": checked_at if checked_at is not None else func.now()}
        self.session.execute(insert(HealthRecord).values(table_id=table_id, **values)
                             .on_conflict_do_update(index_elements=[HealthRecord.table_id], set_=values))

    def stalest(self, limit: int) -> list[int]:
        """The enabled tables whose health is oldest (never checked first), at most `limit`."""
        return list(self.session.scalars(
            select(RegisteredTable.id).outerjoin(HealthRecord, HealthRecord.table_id == RegisteredTable.id)
            .where(RegisteredTable.enabled.is_(True))
            .order_by(HealthRecord.checked_at.asc().nulls_first(), RegisteredTable.id).limit(limit)))

    def worst(self, limit: int = 100) -> list[tuple[TableRecord, HealthScore | None]]:
        """The tables, worst score first, after those not scored yet (registered since the last round: None)."""
        rows = self.session.execute(select(RegisteredTable, HealthRecord)
                                    .outerjoin(HealthRecord, HealthRecord.table_id == RegisteredTable.id)
                                    .order_by(HealthRecord.score.asc().nulls_first(), RegisteredTable.id)
                                    .limit(limit)).all()
        return [(TableRecord.of(t), maybe_of(HealthScore, h)) for t, h in rows]

    def unscored(self) -> int:
        """How many tables have no score yet."""
        return self.session.execute(
            select(func.count()).select_from(RegisteredTable)
            .outerjoin(HealthRecord, HealthRecord.table_id == RegisteredTable.id)
            .where(HealthRecord.table_id.is_(None))).scalar_one()

    def of(self, table_id: int) -> HealthScore | None:
        return maybe_of(HealthScore, self.session.get(HealthRecord, table_id, populate_existing=True))

    def by_status(self) -> dict[str, int]:
        return {status: n for status, n in self.session.execute(
            select(HealthRecord.status, func.count()).group_by(HealthRecord.status)).all()}

    def record_sample(self, table_id: int, *, sampled_at: datetime, score: int, status: str, log_bytes: int | None,
                      log_files: int | None, oldest_uncompacted_seconds: float | None) -> None:
        self.session.add(HealthSample(table_id=table_id, sampled_at=sampled_at, score=score, status=status,
                                      log_bytes=log_bytes, log_files=log_files,
                                      oldest_uncompacted_seconds=oldest_uncompacted_seconds))

    def samples(self, table_id: int, since: datetime) -> list[HealthSampleRecord]:
        """A table's samples since `since`, oldest first."""
        return records_of(HealthSampleRecord, self.session.scalars(
            select(HealthSample).where(HealthSample.table_id == table_id, HealthSample.sampled_at >= since)
            .order_by(HealthSample.sampled_at, HealthSample.id)))

    def fleet_by_hour(self, since: datetime) -> list[FleetHour]:
        """Per hour since `since` (hours with samples only, oldest first): each table's last sample in the hour,
        counted by status and summed (pending log bytes and files)."""
        hour = func.date_trunc("hour", HealthSample.sampled_at).label("hour")
        last = (select(hour, HealthSample.table_id, HealthSample.status, HealthSample.log_bytes,
                       HealthSample.log_files)
                .where(HealthSample.sampled_at >= since)
                .ext(distinct_on(hour, HealthSample.table_id))
                .order_by(hour, HealthSample.table_id, HealthSample.sampled_at.desc(), HealthSample.id.desc())
                .subquery())
        rows = self.session.execute(
            select(last.c.hour, last.c.status, func.count(), func.coalesce(func.sum(last.c.log_bytes), 0),
                   func.coalesce(func.sum(last.c.log_files), 0))
            .group_by(last.c.hour, last.c.status).order_by(last.c.hour)).all()
        hours: dict[datetime, FleetHour] = {}
        for at, status, tables, log_bytes, log_files in rows:
            h = hours.setdefault(at, FleetHour(at, {}, 0, 0))
            h.tables_by_status[status] = tables
            hours[at] = FleetHour(at, h.tables_by_status, h.log_bytes + int(log_bytes), h.log_files + int(log_files))
        return list(hours.values())
