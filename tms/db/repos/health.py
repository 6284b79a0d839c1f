"""Tables' last health scores (`table_health`): recorded by the manager's leader, read by the fleet view."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from ..models import HealthRecord, RegisteredTable


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

    def worst(self, limit: int = 100) -> list[tuple[RegisteredTable, HealthRecord]]:
        """The checked tables, worst score first."""
        rows = self.session.execute(select(RegisteredTable, HealthRecord)
                                    .join(HealthRecord, HealthRecord.table_id == RegisteredTable.id)
                                    .order_by(HealthRecord.score, RegisteredTable.id).limit(limit)).all()
        return [(t, h) for t, h in rows]

    def of(self, table_id: int) -> HealthRecord | None:
        return self.session.get(HealthRecord, table_id, populate_existing=True)

    def by_status(self) -> dict[str, int]:
        return {status: n for status, n in self.session.execute(
            select(HealthRecord.status, func.count()).group_by(HealthRecord.status)).all()}
