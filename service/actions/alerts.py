"""Alerts' use cases: acknowledge an instance_down alert, mute alerts."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import AlertRecord, AlertRepo, ConflictError, InstanceRepo, MuteRecord, MuteRepo, TableRepo

from ..schemas.manager import AlertType, MuteIn

ACKNOWLEDGED_TYPES = frozenset({AlertType.INSTANCE_DOWN.value})


def acknowledge_alert(session: Session, settings: Settings, alert_id: int) -> AlertRecord:
    """Resolve an instance_down alert on an operator's word: the instance is forgotten (unless it beats again).
    NotFoundError for an unknown alert, ConflictError for a type whose condition TMS watches until it clears; an
    alert resolved already is given as it is."""
    alerts = AlertRepo(session)
    alert = alerts.get(alert_id)
    if alert.kind not in ACKNOWLEDGED_TYPES:
        raise ConflictError(f"alert {alert_id} is {alert.kind}: it resolves when its condition clears; only "
                            f"{', '.join(sorted(ACKNOWLEDGED_TYPES))} alerts are acknowledged")
    if alert.resolved_at is not None:
        return alert
    InstanceRepo(session).forget_silent(alert.subject.removeprefix("instance:"),
                                        settings.manager.monitor_instance_missing_seconds)
    resolved = alerts.resolve(alert.fingerprint)
    return resolved or alerts.get(alert_id)


def add_mute(session: Session, mute: MuteIn) -> MuteRecord:
    """A new mute; NotFoundError for an unknown table."""
    if mute.table_id is not None:
        TableRepo(session).get(mute.table_id)
    fields = mute.model_dump()
    fields["alert_types"] = [t.value for t in mute.alert_types]
    return MuteRepo(session).create(**fields)
