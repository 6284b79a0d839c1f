"""The manager's data as the API and the dashboard show it: the leading manager and its standbys, a webhook
without its secret."""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import InstanceRepo, LeaseRepo
from tms.leadership import LEASE_NAME

from .schemas.manager import WebhookOut


def manager_status(session: Session, settings: Settings) -> dict[str, Any]:
    """The leading manager, its epoch and the standbys."""
    leases = LeaseRepo(session)
    lease = leases.get(LEASE_NAME)
    live = lease is not None and leases.is_live(lease)
    leader = lease.holder if live and lease is not None else None
    alive = InstanceRepo(session).alive("manager", 2 * settings.manager.heartbeat_seconds + 1)
    return {"leader": leader, "epoch": lease.epoch if lease else 0,
            "since": lease.acquired_at if leader and lease else None,
            "last_work_at": lease.last_work_at if leader and lease else None,
            "standbys": [{"instance": i.id, "heartbeat_at": i.heartbeat_at} for i in alive if i.id != leader]}


def webhook_out(hook: Any) -> WebhookOut:
    """A webhook as shown: its kinds of alerts, and whether it has a secret (never the secret)."""
    return WebhookOut.model_validate({**{c: getattr(hook, c) for c in ("id", "name", "url", "min_severity",
                                                                        "format", "enabled", "created_at")},
                                      "kinds": hook.kinds or [], "has_secret": bool(hook.secret)})
