"""The manager's state, alerts, mutes (alert blacklists) and webhooks."""
from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import AnyHttpUrl, BaseModel, Field, computed_field, field_validator, model_validator

from .common import BodyBool, Id, Record, ShortText, never_null


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class WebhookFormat(StrEnum):
    JSON = "json"
    SLACK = "slack"


class AlertType(StrEnum):
    TASK_FAILED = "task_failed"
    TASK_TIMEOUT = "task_timeout"
    NOT_SCHEDULED = "not_scheduled"
    HELD_TOO_LONG = "held_too_long"
    TABLE_UNREADABLE = "table_unreadable"
    TABLE_DAMAGED = "table_damaged"
    PLANNING_FAILED = "planning_failed"
    COMPENSATION_FAILED = "compensation_failed"
    SERVICE_REFUSED = "service_refused"
    PLAN_ROLLED_BACK = "plan_rolled_back"
    PLAN_UNRUNNABLE = "plan_unrunnable"
    INSTANCE_DOWN = "instance_down"
    NO_LEADER = "no_leader"
    QUEUE_SATURATED = "queue_saturated"
    BACKLOG_GROWING = "backlog_growing"
    PREDICTED_TIMEOUT = "predicted_timeout"
    CANARY_ROLLED_BACK = "canary_rolled_back"
    FRESHNESS_AT_RISK = "freshness_at_risk"
    TABLE_MISSING = "table_missing"
    BACKUP_FAILED = "backup_failed"
    BACKUP_MISSED = "backup_missed"
    RESTORE_DONE = "restore_done"


class StandbyOut(BaseModel):
    instance: str
    heartbeat_at: datetime


class ManagerOut(BaseModel):
    leader: str | None = Field(description="The leading manager's instance id; null: no live leader")
    epoch: int = Field(description="Grows with every change of leader")
    since: datetime | None = Field(description="When the leader took the lease")
    last_work_at: datetime | None = Field(description="The leader's last periodic run")
    standbys: list[StandbyOut]


class AlertOut(Record):
    id: int
    type: str
    kind: str = Field(description="The alert's type (its older name)")
    severity: str
    state: str = Field(description="firing | resolved")
    subject: str = Field(description="What it is about: table:<id>, task:<id>, queue:<name>, instance:<id>")
    table_id: int | None
    task_id: int | None
    message: str
    details: dict[str, Any]
    count: int = Field(description="Sightings while firing")
    muted: bool = Field(description="A mute matched it: recorded, not delivered")
    last_seen: datetime
    created_at: datetime
    resolved_at: datetime | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def first_seen(self) -> datetime:
        """When it fired (its `created_at`)."""
        return self.created_at


class AlertPage(BaseModel):
    items: list[AlertOut]
    total: int | None = Field(description="Rows matching the filters; null on the pages after a cursor")
    limit: int
    offset: int
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last")


class MuteIn(BaseModel):
    """Every field given must match; none given mutes everything."""
    table_id: Id | None = None
    database: ShortText | None = None
    owner: ShortText | None = None
    queue: ShortText | None = None
    alert_types: list[AlertType] = Field(default_factory=list, description="Empty: every type")
    reason: ShortText = ""
    expires_at: datetime | None = Field(None, description="Null: until deleted")

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("must carry a time zone (e.g. 2026-01-01T00:00:00Z)")
        return value


class MuteOut(Record):
    id: int
    table_id: int | None
    database: str | None
    owner: str | None
    queue: str | None
    alert_types: list[str]
    reason: str
    created_at: datetime
    expires_at: datetime | None


class WebhookIn(BaseModel):
    url: AnyHttpUrl
    secret: ShortText | None = Field(None, min_length=8, description="HMAC-SHA256 key of X-TMS-Signature")
    alert_types: list[AlertType] = Field(default_factory=list, description="Empty: every type")
    min_severity: Severity = Severity.INFO
    format: WebhookFormat = WebhookFormat.JSON
    name: ShortText | None = Field(None, max_length=64)
    enabled: BodyBool = True


class WebhookChanges(BaseModel):
    """Only the fields given change."""
    url: AnyHttpUrl | None = Field(None, json_schema_extra=never_null)
    secret: ShortText | None = Field(None, min_length=8)
    alert_types: list[AlertType] | None = Field(None, json_schema_extra=never_null)
    min_severity: Severity | None = Field(None, json_schema_extra=never_null)
    format: WebhookFormat | None = Field(None, json_schema_extra=never_null)
    name: ShortText | None = Field(None, max_length=64)
    enabled: BodyBool | None = Field(None, json_schema_extra=never_null)

    @model_validator(mode="after")
    def _no_nulls(self) -> WebhookChanges:
        for name in ("url", "alert_types", "min_severity", "format", "enabled"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} must not be null")
        return self


class WebhookOut(Record):
    id: int
    name: str | None
    url: str
    alert_types: list[str] = Field(validation_alias="kinds")
    min_severity: str
    format: str
    has_secret: bool
    enabled: bool
    created_at: datetime


class DeliveryOut(Record):
    id: int
    webhook_id: int
    alert_id: int
    event: str
    state: str = Field(description="pending | delivered | expired")
    attempts: int
    attempt_log: list[dict[str, Any]] = Field(description="Each attempt: at, HTTP status, error")
    next_attempt_at: datetime
    created_at: datetime
    delivered_at: datetime | None
    body: str


class DeliveryPage(BaseModel):
    items: list[DeliveryOut]
    total: int
    limit: int
    offset: int
