"""What a webhook receives: the body of an alert's delivery in the webhook's format, and its signature.

    X-TMS-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook's secret>
    X-TMS-Delivery:  <delivery id>  (receivers deduplicate by it)"""
from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


def alert_document(alert: Any, event: str) -> dict[str, Any]:
    """The alert as a JSON format delivery names it; `event` is "firing" or "resolved"."""
    return {"type": alert.kind, "severity": alert.severity, "state": event, "subject": alert.subject,
            "message": alert.message, "alert_id": alert.id, "table_id": alert.table_id, "task_id": alert.task_id,
            "count": alert.count, "first_seen": _iso(alert.created_at), "last_seen": _iso(alert.last_seen),
            "resolved_at": _iso(alert.resolved_at), "details": alert.details or {}}


def render(alert: Any, event: str, fmt: str) -> str:
    document = alert_document(alert, event)
    if fmt == "slack":
        icons = {"critical": ":rotating_light:", "warning": ":warning:"}
        icon = ":white_check_mark:" if event == "resolved" else icons.get(alert.severity, ":information_source:")
        text = f"{icon} [{event}] {alert.severity} {alert.kind} {alert.subject}: {alert.message}"
        return json.dumps({"text": text, "tms": document}, separators=(",", ":"), sort_keys=True)
    return json.dumps(document, separators=(",", ":"), sort_keys=True)


def signature(secret: str, timestamp: int, body: str) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: str, header: str, body: str) -> bool:
    """True if `header` is a valid X-TMS-Signature of `body` (for receivers and tests)."""
    try:
        parts = dict(part.split("=", 1) for part in header.split(","))
        expected = signature(secret, int(parts["t"]), body)
    except (KeyError, ValueError):
        return False
    return hmac.compare_digest(expected, header)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
