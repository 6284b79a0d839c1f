"""Alerts (one open alert per fingerprint), the blacklist that mutes delivery, and webhooks."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from ..errors import ConflictError
from ..models import Alert, AlertBlacklist, RegisteredTable, Webhook


class AlertRepo:
    def __init__(self, session: Session):
        self.session = session

    def raise_alert(self, *, kind: str, severity: str, message: str, fingerprint: str,
                    table_id: int | None = None, task_id: int | None = None,
                    details: dict[str, Any] | None = None) -> tuple[Alert, bool]:
        """Open an alert unless one with the same fingerprint is open: (alert, created)."""
        stmt = (insert(Alert).values(kind=kind, severity=severity, message=message, fingerprint=fingerprint,
                                     table_id=table_id, task_id=task_id, details=details or {})
                .on_conflict_do_nothing(index_elements=[Alert.fingerprint],
                                        index_where=text("resolved_at IS NULL"))
                .returning(Alert.id))
        alert_id = self.session.execute(stmt).scalar()
        alert = (self.session.get(Alert, alert_id) if alert_id is not None else
                 self.session.scalar(select(Alert).where(Alert.fingerprint == fingerprint,
                                                         Alert.resolved_at.is_(None))))
        if alert is None:  # the open alert that conflicted was resolved meanwhile
            raise ConflictError(f"alert {fingerprint} changed meanwhile; retry")
        return alert, alert_id is not None

    def resolve(self, fingerprint: str) -> None:
        self.session.execute(update(Alert).where(Alert.fingerprint == fingerprint, Alert.resolved_at.is_(None))
                             .values(resolved_at=func.now()), execution_options={"synchronize_session": False})

    def find(self, *, table_id: int | None = None, kind: str | None = None, severity: str | None = None,
             open_only: bool = False, since: datetime | None = None, limit: int = 50,
             offset: int = 0) -> tuple[list[Alert], int]:
        conditions = []
        if table_id is not None:
            conditions.append(Alert.table_id == table_id)
        if kind is not None:
            conditions.append(Alert.kind == kind)
        if severity is not None:
            conditions.append(Alert.severity == severity)
        if open_only:
            conditions.append(Alert.resolved_at.is_(None))
        if since is not None:
            conditions.append(Alert.created_at >= since)
        total = self.session.scalar(select(func.count()).select_from(Alert).where(*conditions))
        rows = self.session.scalars(select(Alert).where(*conditions).order_by(Alert.id.desc())
                                    .limit(limit).offset(offset))
        return list(rows), total or 0

    def undelivered(self, limit: int = 100) -> list[Alert]:
        return list(self.session.scalars(select(Alert).where(Alert.delivered_at.is_(None))
                                         .order_by(Alert.id).limit(limit)))

    def mark_delivered(self, alert_id: int) -> None:
        self.session.execute(update(Alert).where(Alert.id == alert_id).values(delivered_at=func.now()),
                             execution_options={"synchronize_session": False})

    def is_muted(self, alert: Alert) -> bool:
        """True if an unexpired blacklist entry matches the alert (each entry's null fields match anything)."""
        database = (select(RegisteredTable.database).where(RegisteredTable.id == alert.table_id)
                    .scalar_subquery())
        stmt = select(AlertBlacklist.id).where(
            or_(AlertBlacklist.kind.is_(None), AlertBlacklist.kind == alert.kind),
            or_(AlertBlacklist.table_id.is_(None), AlertBlacklist.table_id == alert.table_id),
            or_(AlertBlacklist.database.is_(None), AlertBlacklist.database == database),
            or_(AlertBlacklist.expires_at.is_(None), AlertBlacklist.expires_at > func.now()))
        return self.session.execute(stmt.limit(1)).first() is not None

    def webhooks(self) -> list[Webhook]:
        return list(self.session.scalars(select(Webhook).where(Webhook.enabled.is_(True)).order_by(Webhook.id)))
