"""Webhooks (where alerts are sent), mutes (which alerts are not), and the outbox of deliveries."""
from __future__ import annotations

import builtins
from collections.abc import Collection
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, select, update
from sqlalchemy.orm import Session

from ..errors import NotFoundError
from ..models import Alert, Mute, Webhook, WebhookDelivery
from ..records import DeliveryRecord, MuteRecord, WebhookRecord, records_of


def _rows(result: Any) -> int:
    """The rows an UPDATE or DELETE touched."""
    return cast(CursorResult[Any], result).rowcount


class WebhookRepo:
    def __init__(self, session: Session):
        self.session = session

    def create(self, **fields: Any) -> WebhookRecord:
        hook = Webhook(**fields)
        self.session.add(hook)
        self.session.flush()
        self.session.refresh(hook)
        return WebhookRecord.of(hook)

    def get(self, webhook_id: int) -> WebhookRecord:
        return WebhookRecord.of(self._row(webhook_id))

    def _row(self, webhook_id: int) -> Webhook:
        hook = self.session.get(Webhook, webhook_id, populate_existing=True)
        if hook is None:
            raise NotFoundError(f"no webhook with id {webhook_id}")
        return hook

    def list(self) -> builtins.list[WebhookRecord]:
        return records_of(WebhookRecord, self.session.scalars(select(Webhook).order_by(Webhook.id)))

    def update(self, webhook_id: int, **changes: Any) -> WebhookRecord:
        hook = self._row(webhook_id)
        for name, value in changes.items():
            setattr(hook, name, value)
        self.session.flush()
        return WebhookRecord.of(hook)

    def delete(self, webhook_id: int) -> None:
        if _rows(self.session.execute(delete(Webhook).where(Webhook.id == webhook_id))) == 0:
            raise NotFoundError(f"no webhook with id {webhook_id}")

    # --- deliveries ---------------------------------------------------------------------------------
    def deliveries(self, webhook_id: int, *, limit: int = 50,
                   offset: int = 0) -> tuple[builtins.list[DeliveryRecord], int]:
        self.get(webhook_id)
        condition = WebhookDelivery.webhook_id == webhook_id
        total = self.session.scalar(select(func.count()).select_from(WebhookDelivery).where(condition))
        rows = self.session.scalars(select(WebhookDelivery).where(condition).order_by(WebhookDelivery.id.desc())
                                    .limit(limit).offset(offset))
        return records_of(DeliveryRecord, rows), total or 0

    def due(self, limit: int = 50, *, kinds: Collection[str] | None = None
            ) -> builtins.list[tuple[DeliveryRecord, WebhookRecord]]:
        """Pending deliveries whose time has come (of alerts of `kinds` only, if given), oldest first, locked
        (SKIP LOCKED) for this transaction."""
        stmt = (select(WebhookDelivery, Webhook).join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
                .where(WebhookDelivery.state == "pending", WebhookDelivery.next_attempt_at <= func.now()))
        if kinds is not None:
            stmt = stmt.join(Alert, Alert.id == WebhookDelivery.alert_id).where(Alert.kind.in_(list(kinds)))
        rows = self.session.execute(
            stmt.order_by(WebhookDelivery.id).limit(limit).with_for_update(of=WebhookDelivery, skip_locked=True))
        return [(DeliveryRecord.of(d), WebhookRecord.of(w)) for d, w in rows]

    def expire_older_than(self, max_age_seconds: float) -> int:
        """Give up the pending deliveries older than `max_age_seconds`."""
        return _rows(self.session.execute(
            update(WebhookDelivery).where(WebhookDelivery.state == "pending",
                                          WebhookDelivery.created_at < func.now() - timedelta(seconds=max_age_seconds))
            .values(state="expired"), execution_options={"synchronize_session": False}))

    def hold(self, delivery_ids: Collection[int], seconds: float) -> None:
        """Put the deliveries' next attempt `seconds` ahead: no second sender takes them while one tries."""
        self.session.execute(update(WebhookDelivery).where(WebhookDelivery.id.in_(list(delivery_ids)))
                             .values(next_attempt_at=func.now() + timedelta(seconds=seconds)),
                             execution_options={"synchronize_session": False})

    def record_attempt(self, delivery_id: int, *, at: str, status: int | None, error: str | None,
                       delivered: bool, retry_in_seconds: float) -> bool:
        """Record an attempt of the delivery, row-locked for this transaction, if it is still pending; False if
        it is not (delivered or expired meanwhile): nothing is recorded."""
        delivery = self.session.get(WebhookDelivery, delivery_id, with_for_update=True)
        if delivery is None or delivery.state != "pending":
            return False
        delivery.attempts += 1
        delivery.attempt_log = [*delivery.attempt_log, {"at": at, "status": status, "error": error}][-20:]
        if delivered:
            delivery.state = "delivered"
            delivery.delivered_at = func.now()
        else:
            delivery.next_attempt_at = func.now() + timedelta(seconds=retry_in_seconds)
        self.session.flush()
        return True

class MuteRepo:
    def __init__(self, session: Session):
        self.session = session

    def create(self, **fields: Any) -> MuteRecord:
        mute = Mute(**fields)
        self.session.add(mute)
        self.session.flush()
        self.session.refresh(mute)
        return MuteRecord.of(mute)

    def list(self, *, include_expired: bool = False) -> builtins.list[MuteRecord]:
        stmt = select(Mute).order_by(Mute.id)
        if not include_expired:
            stmt = stmt.where((Mute.expires_at.is_(None)) | (Mute.expires_at > func.now()))
        return records_of(MuteRecord, self.session.scalars(stmt))

    def delete(self, mute_id: int) -> None:
        if _rows(self.session.execute(delete(Mute).where(Mute.id == mute_id))) == 0:
            raise NotFoundError(f"no mute with id {mute_id}")
