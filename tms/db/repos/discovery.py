"""What discovery found under the storage roots (`discovered_tables`)."""
from __future__ import annotations

import builtins
from collections.abc import Iterable

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from ..models import DiscoveredTable
from ..records import DiscoveredRecord, records_of


class DiscoveryRepo:
    def __init__(self, session: Session):
        self.session = session

    def under(self, root: str) -> dict[str, DiscoveredRecord]:
        """base path -> what is known of the tables found under `root`."""
        return {d.base_path: DiscoveredRecord.of(d) for d in self.session.scalars(
            select(DiscoveredTable).where(DiscoveredTable.root == root))}

    def record(self, base_path: str, *, root: str, state: str, reason: str | None = None,
               table_id: int | None = None) -> None:
        values = {"root": root, "state": state, "reason": reason, "table_id": table_id}
        self.session.execute(insert(DiscoveredTable).values(base_path=base_path, **values).on_conflict_do_update(
            index_elements=[DiscoveredTable.base_path], set_={**values, "last_seen_at": func.now()}))

    def seen(self, base_paths: Iterable[str]) -> None:
        paths = list(base_paths)
        if paths:
            self.session.execute(update(DiscoveredTable).where(DiscoveredTable.base_path.in_(paths))
                                 .values(last_seen_at=func.now()), execution_options={"synchronize_session": False})

    def list(self, *, state: str | None = None, limit: int = 100, offset: int = 0
             ) -> tuple[builtins.list[DiscoveredRecord], int]:
        condition = [DiscoveredTable.state == state] if state else []
        total = self.session.scalar(select(func.count()).select_from(DiscoveredTable).where(*condition)) or 0
        rows = self.session.scalars(select(DiscoveredTable).where(*condition).order_by(DiscoveredTable.base_path)
                                    .limit(limit).offset(offset))
        return records_of(DiscoveredRecord, rows), total
