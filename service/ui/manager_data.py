"""The manager's data on the dashboard's pages (the leader, mutes, webhooks and their deliveries), read from the
database as the manager's API routes read it (the same functions and output models), so a page shows what the
API says without calling the service's own routes."""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import MuteRepo, WebhookRepo

from ..manager_view import manager_status, webhook_out
from ..schemas.manager import DeliveryOut, MuteOut

DELIVERIES_SHOWN = 50


def leader(session: Session, settings: Settings) -> dict[str, Any]:
    """The API's GET /api/v1/manager."""
    return manager_status(session, settings)


def mutes(session: Session) -> list[dict[str, Any]]:
    """The mutes in force, as GET /api/v1/mutes shows them."""
    return [MuteOut.model_validate(m).model_dump(mode="json") for m in MuteRepo(session).list()]


def webhooks(session: Session) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each webhook (without its secret) and its latest deliveries, as the admin's API shows them."""
    repo = WebhookRepo(session)
    out = []
    for hook in repo.list():
        rows, _ = repo.deliveries(hook.id, limit=DELIVERIES_SHOWN, offset=0)
        out.append((webhook_out(hook).model_dump(mode="json"),
                    [DeliveryOut.model_validate(d).model_dump(mode="json") for d in rows]))
    return out
