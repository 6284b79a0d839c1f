"""Alerts: one open (firing) alert per type and subject, which counts its sightings and resolves when its
condition clears; whether a mute matches it; and the webhook deliveries (the outbox) of its firing and its
resolution, written in the same transaction as the alert."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import any_, func, literal, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from tms.webhooks.payload import SEVERITY_RANK, render

from ..errors import NotFoundError
from ..models import Alert, Mute, RegisteredTable, Task, Webhook, WebhookDelivery
from ..records import AlertRecord, maybe_of, records_of


@dataclass(frozen=True)
class Sighting:
    """A condition a monitoring rule sees now: the alert it keeps firing."""
    severity: str
    message: str
    table_id: int | None = None
    task_id: int | None = None
    queue: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class AlertRepo:
    def __init__(self, session: Session):
        self.session = session

    # --- firing and resolving -----------------------------------------------------------------------
    def fire(self, kind: str, subject: str, sighting: Sighting) -> tuple[AlertRecord, bool]:
        """Fire the (kind, subject) alert, or count one more sighting of the open one: (alert, created)."""
        details = {**sighting.details, **({"queue": sighting.queue} if sighting.queue else {})}
        return self.raise_alert(kind=kind, severity=sighting.severity, message=sighting.message,
                                fingerprint=f"{kind}:{subject}", subject=subject, table_id=sighting.table_id,
                                task_id=sighting.task_id, details=details)

    def raise_alert(self, *, kind: str, severity: str, message: str, fingerprint: str,
                    table_id: int | None = None, task_id: int | None = None, subject: str | None = None,
                    details: dict[str, Any] | None = None) -> tuple[AlertRecord, bool]:
        """Open an alert unless one with the same fingerprint is open, in which case its count and last
        sighting grow: (alert, created). A new alert is marked muted if a mute matches it; otherwise its
        deliveries are queued for every webhook that wants it."""
        if subject is None:
            subject = f"task:{task_id}" if task_id is not None else f"table:{table_id}" if table_id else ""
        stmt = (insert(Alert).values(kind=kind, severity=severity, message=message, fingerprint=fingerprint,
                                     subject=subject, table_id=table_id, task_id=task_id, details=details or {})
                .on_conflict_do_nothing(index_elements=[Alert.fingerprint],
                                        index_where=text("resolved_at IS NULL"))
                .returning(Alert.id))
        alert_id = self.session.execute(stmt).scalar()
        if alert_id is None:
            alert = self.session.scalars(
                update(Alert).where(Alert.fingerprint == fingerprint, Alert.resolved_at.is_(None))
                .values(count=Alert.count + 1, last_seen=func.now(), message=message).returning(Alert),
                execution_options={"populate_existing": True}).one_or_none()
            if alert is not None:
                return AlertRecord.of(alert), False
            return self.raise_alert(kind=kind, severity=severity, message=message, fingerprint=fingerprint,
                                    table_id=table_id, task_id=task_id, subject=subject, details=details)
        alert = self.session.get(Alert, alert_id, populate_existing=True)
        assert alert is not None
        alert.muted = self.is_muted(alert)
        self.session.flush()
        if not alert.muted:
            self._enqueue(alert, "firing")
        return AlertRecord.of(alert), True

    def get(self, alert_id: int) -> AlertRecord:
        alert = self.session.get(Alert, alert_id, populate_existing=True)
        if alert is None:
            raise NotFoundError(f"no alert with id {alert_id}")
        return AlertRecord.of(alert)

    def resolve(self, fingerprint: str) -> AlertRecord | None:
        """Resolve the open alert of `fingerprint` (if any) and queue its resolution's deliveries."""
        alert = self.session.scalars(
            update(Alert).where(Alert.fingerprint == fingerprint, Alert.resolved_at.is_(None))
            .values(resolved_at=func.now()).returning(Alert),
            execution_options={"populate_existing": True}).one_or_none()
        if alert is not None and not alert.muted:
            self._enqueue(alert, "resolved")
        return maybe_of(AlertRecord, alert)

    def sync(self, kind: str, sightings: Mapping[str, Sighting]) -> tuple[list[AlertRecord], list[AlertRecord]]:
        """Make the open alerts of `kind` exactly those of `sightings` (subject -> sighting): new ones fire,
        open ones count a sighting, the others resolve. Returns (fired, resolved)."""
        fired = [alert for subject, s in sightings.items() for alert, created in [self.fire(kind, subject, s)]
                 if created]
        open_subjects = self.session.scalars(select(Alert.subject).where(Alert.kind == kind,
                                                                         Alert.resolved_at.is_(None))).all()
        resolved = [a for subject in open_subjects if subject not in sightings
                    for a in [self.resolve(f"{kind}:{subject}")] if a is not None]
        return fired, resolved

    def open_alert(self, kind: str, subject: str) -> AlertRecord | None:
        return maybe_of(AlertRecord, self.session.scalar(select(Alert).where(Alert.fingerprint == f"{kind}:{subject}",
                                                                             Alert.resolved_at.is_(None))))

    def open_for_table(self, table_id: int, kinds: Iterable[str]) -> list[AlertRecord]:
        """The table's open alerts of `kinds` (what a planning pass checks for conditions that cleared)."""
        return records_of(AlertRecord, self.session.scalars(select(Alert).where(
            Alert.table_id == table_id, Alert.kind.in_(list(kinds)), Alert.resolved_at.is_(None))))

    # --- reading ------------------------------------------------------------------------------------
    def find(self, *, table_id: int | None = None, kind: str | None = None, severity: str | None = None,
             open_only: bool = False, state: str | None = None, muted: bool | None = None,
             subject: str | None = None, since: datetime | None = None, limit: int = 50,
             offset: int = 0, before_id: int | None = None, count: bool = True) -> tuple[list[AlertRecord], int]:
        """A page of alerts (newest first) matching every given filter, and the total; `before_id` starts
        the page after that alert (keyset pagination); without `count`, the total is not counted (0)."""
        conditions = []
        if table_id is not None:
            conditions.append(Alert.table_id == table_id)
        if kind is not None:
            conditions.append(Alert.kind == kind)
        if severity is not None:
            conditions.append(Alert.severity == severity)
        if open_only or state == "firing":
            conditions.append(Alert.resolved_at.is_(None))
        elif state == "resolved":
            conditions.append(Alert.resolved_at.is_not(None))
        if muted is not None:
            conditions.append(Alert.muted.is_(muted))
        if subject is not None:
            conditions.append(Alert.subject == subject)
        if since is not None:
            conditions.append(Alert.created_at >= since)
        total = self.session.scalar(select(func.count()).select_from(Alert).where(*conditions)) if count else 0
        if before_id is not None:
            conditions.append(Alert.id < before_id)
        rows = self.session.scalars(select(Alert).where(*conditions).order_by(Alert.id.desc())
                                    .limit(limit).offset(offset))
        return records_of(AlertRecord, rows), total or 0

    # --- mutes --------------------------------------------------------------------------------------
    def is_muted(self, alert: Alert | AlertRecord) -> bool:
        """True if an unexpired mute matches the alert: each of its set fields (table, database, owner,
        queue) matches, and its alert types are empty or name the alert's."""
        table = self.session.get(RegisteredTable, alert.table_id) if alert.table_id is not None else None
        queue = (alert.details or {}).get("queue")
        if queue is None and alert.task_id is not None:
            queue = self.session.scalar(select(Task.queue).where(Task.id == alert.task_id))
        stmt = select(Mute.id).where(
            or_(Mute.table_id.is_(None), Mute.table_id == alert.table_id),
            or_(Mute.database.is_(None), Mute.database == (table.database if table else None)),
            or_(Mute.owner.is_(None), Mute.owner == (table.owner if table else None)),
            or_(Mute.queue.is_(None), Mute.queue == queue),
            or_(Mute.alert_types == text("'{}'::text[]"), literal(alert.kind) == any_(Mute.alert_types)),
            or_(Mute.expires_at.is_(None), Mute.expires_at > func.now()))
        return self.session.execute(stmt.limit(1)).first() is not None

    # --- the outbox ---------------------------------------------------------------------------------
    def _enqueue(self, alert: Alert, event: str) -> None:
        for hook in self.session.scalars(select(Webhook).where(Webhook.enabled.is_(True)).order_by(Webhook.id)):
            if hook.kinds and alert.kind not in hook.kinds:
                continue
            if SEVERITY_RANK[alert.severity] < SEVERITY_RANK[hook.min_severity]:
                continue
            self.session.add(WebhookDelivery(webhook_id=hook.id, alert_id=alert.id, event=event,
                                             body=render(alert, event, hook.format)))
        self.session.flush()
