"""Resource queues: where Spark jobs run, and with how much."""
from __future__ import annotations

import builtins
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from ..errors import NotFoundError
from ..models import ResourceQueue
from ..records import QueueRecord, maybe_of, records_of


class QueueRepo:
    def __init__(self, session: Session):
        self.session = session

    def list(self, *, enabled_only: bool = False) -> list[QueueRecord]:
        stmt = select(ResourceQueue).order_by(ResourceQueue.name)
        if enabled_only:
            stmt = stmt.where(ResourceQueue.enabled.is_(True))
        return records_of(QueueRecord, self.session.scalars(stmt, execution_options={"populate_existing": True}))

    def get(self, name: str) -> QueueRecord:
        return QueueRecord.of(self._row(name))

    def _row(self, name: str) -> ResourceQueue:
        queue = self.session.scalar(select(ResourceQueue).where(ResourceQueue.name == name))
        if queue is None:
            raise NotFoundError(f"no queue named {name!r}")
        return queue

    def put(self, name: str, **fields: Any) -> QueueRecord:
        """Create the queue, or replace its settings if it exists."""
        stmt = (insert(ResourceQueue).values(name=name, **fields)
                .on_conflict_do_update(index_elements=[ResourceQueue.name], set_=fields)
                .returning(ResourceQueue))
        return QueueRecord.of(self.session.scalars(stmt, execution_options={"populate_existing": True}).one())

    def lock_all(self, *, enabled_only: bool = True) -> builtins.list[QueueRecord]:
        """The queues, locked until the transaction ends (in name order, so lockers never deadlock): a
        worker holds them while it counts a queue's running jobs and claims a task into it, so two workers
        never fill the same free slot."""
        stmt = select(ResourceQueue).order_by(ResourceQueue.name).with_for_update()
        if enabled_only:
            stmt = stmt.where(ResourceQueue.enabled.is_(True))
        return records_of(QueueRecord, self.session.scalars(stmt, execution_options={"populate_existing": True}))

    def create_if_none(self, name: str, **fields: Any) -> QueueRecord | None:
        """Create the queue if no queue exists at all (a first start); None if there already are queues."""
        if self.session.scalar(select(ResourceQueue.id).limit(1)) is not None:
            return None
        stmt = (insert(ResourceQueue).values(name=name, **fields)
                .on_conflict_do_nothing(index_elements=[ResourceQueue.name]).returning(ResourceQueue))
        return maybe_of(QueueRecord, self.session.scalars(stmt).one_or_none())

    def delete(self, name: str) -> None:
        self.session.delete(self._row(name))
        self.session.flush()
