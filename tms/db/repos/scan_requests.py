"""The reconciliation scans the manager's leader asks for: a handful of rows, one per chunk of table ids,
each taken by one planner (SKIP LOCKED), which then scans the enabled tables in its range."""
from __future__ import annotations

from sqlalchemy import delete, exists, func, insert, select
from sqlalchemy.orm import Session

from ..models import RegisteredTable, ScanRequest


class ScanRequestRepo:
    def __init__(self, session: Session):
        self.session = session

    def request(self, per_chunk: int) -> int:
        """Ask for a scan of every table: one row per `per_chunk` consecutive table ids (numbered from the
        primary key's index, never reading the tables' rows); the number of rows. Nothing while chunks of the
        previous scan wait: a scan nobody took yet is not asked for twice."""
        numbered = select(RegisteredTable.id, ((func.row_number().over(order_by=RegisteredTable.id) - 1)
                                               // per_chunk).label("chunk")).subquery()
        chunks = (select(func.min(numbered.c.id), func.max(numbered.c.id))
                  .where(~exists(select(ScanRequest.id))).group_by(numbered.c.chunk))
        return len(self.session.scalars(insert(ScanRequest).from_select(["first_table_id", "last_table_id"], chunks)
                                        .returning(ScanRequest.id)).all())

    def take(self) -> tuple[int, int] | None:
        """Take (and delete) one chunk no other planner is taking: its first and last table id, or None."""
        oldest = select(ScanRequest.id).order_by(ScanRequest.id).limit(1).with_for_update(skip_locked=True)
        row = self.session.execute(delete(ScanRequest).where(ScanRequest.id == oldest.scalar_subquery())
                                   .returning(ScanRequest.first_table_id, ScanRequest.last_table_id)).one_or_none()
        return (row.first_table_id, row.last_table_id) if row else None

    def waiting(self) -> int:
        """Chunks not taken yet."""
        return self.session.scalar(select(func.count()).select_from(ScanRequest)) or 0
