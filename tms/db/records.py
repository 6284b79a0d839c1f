"""What the repositories hand out: frozen, typed records of the rows, never the rows themselves (issue 39).

A record has the row's columns under the same names, so callers (routes, templates, response models built
`from_attributes`) read it as they read the row; a change is a named command of a repository, not a column
assigned. Each repository converts its rows at its door with `record_of`."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar

from tms.hudi.table.properties import TableType
from tms.planning.policy import TablePolicy
from tms.table_service import TableService
from tms.task_payload import TaskPayload, payload_of

R = TypeVar("R")


def record_of(record_type: type[R], row: Any, **parsed: Any) -> R:
    """The record of `row`: each of the record's fields read from the row's column of that name, but those
    given in `parsed` (a column parsed into its type)."""
    fields = dataclasses.fields(record_type)  # type: ignore[arg-type]
    return record_type(**{f.name: parsed[f.name] if f.name in parsed else getattr(row, f.name) for f in fields})


@dataclass(frozen=True)
class TableRecord:
    """A registered table (`tables`): what `hoodie.properties` said at registration, and its settings."""
    id: int
    base_path: str
    name: str
    database: str
    table_type: TableType
    table_version: int
    created_at: datetime
    updated_at: datetime
    record_key_fields: list[str] = field(default_factory=list)
    partition_fields: list[str] = field(default_factory=list)
    ordering_fields: list[str] = field(default_factory=list)
    merge_mode: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    policies: dict[str, Any] = field(default_factory=dict)  # explicitly set options only; `policy` parses them
    concurrency_options: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    priority: int = 0
    queue: str | None = None
    owner: str | None = None
    own_settings: dict[str, Any] = field(default_factory=dict)
    template: str | None = None
    callback_key_hash: str | None = None
    planner_state: dict[str, Any] = field(default_factory=dict)
    planned_at: datetime | None = None
    tick_due_at: datetime | None = None
    tick_requested_at: datetime | None = None
    timeline_stamp: str | None = None

    @cached_property
    def policy(self) -> TablePolicy:
        """The table's policy, parsed once (on first use: a stored policy that no longer parses fails where it
        is used, as before, not every read of the table)."""
        return TablePolicy.from_stored(self.policies)

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @classmethod
    def of(cls, row: Any) -> TableRecord:
        return record_of(cls, row, table_type=TableType(row.table_type))


@dataclass(frozen=True)
class TaskRecord:
    """The service's work on one instant (`tasks`)."""
    id: int
    table_id: int
    service: TableService
    instant: str
    target_instant: str | None
    state: str
    version: int
    attempt: int
    priority: int
    queue: str | None
    requested_resources: dict[str, Any]
    plan_stats: dict[str, Any]  # the payload as stored (and as the API shows it); `payload` reads it typed
    blockers: list[str]
    planned_by_tms: bool
    lease_owner: str | None
    lease_expires_at: datetime | None
    fencing_token: int
    spark_app_id: str | None
    run_after: datetime | None
    error: str | None
    failure_kind: str | None
    retryable: bool | None
    retry_reason: str | None
    next_attempt_at: datetime | None
    retry_series_start: int
    memory_factor: float
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @cached_property
    def payload(self) -> TaskPayload:
        """The task's payload, typed by its service (tms.task_payload): the plan's statistics or the request."""
        return payload_of(self.service, self.plan_stats)

    @classmethod
    def of(cls, row: Any) -> TaskRecord:
        record = record_of(cls, row, service=TableService(row.service))
        record.payload  # noqa: B018 -- parsed at the door: a payload that does not fit its service fails here
        return record


@dataclass(frozen=True)
class QueueRecord:
    """A resource queue, where Spark jobs run and with how much (`queues`)."""
    id: int
    name: str
    kind: str
    master: str
    spark_conf: dict[str, str]
    capacity: int
    executor_cores: int
    min_executor_memory_mb: int
    max_executor_memory_mb: int
    max_executors: int
    reserved_for_priority: int | None
    allowed_databases: list[str] | None
    allowed_tables: list[str] | None
    allowed_services: list[str] | None
    enabled: bool
    warm_engine_enabled: bool
    warm_engine_executors: int
    warm_engine_executor_memory_mb: int
    warm_engine_executor_cores: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Any) -> QueueRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class EngineRecord:
    """A registered execution engine: the Spark and the job code a task's job runs on (`engines`)."""
    id: int
    name: str
    spark_home: str | None
    spark_submit: str | None
    pyspark_version: str | None
    code_version: str
    code_path: str
    spark_conf: dict[str, str]
    kind: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Any) -> EngineRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class RolloutRecord:
    """A rollout rule: which engine runs the tasks it matches, a canary's share and its results' margin (`rollouts`)."""
    id: int
    name: str
    queue: str | None
    database: str | None
    table_name: str | None
    stable_engine: str
    canary_engine: str | None
    canary_percent: int
    shadow: bool
    failure_margin: float
    min_tasks: int
    state: str
    rolled_back_at: datetime | None
    rollback_reason: str | None
    since: datetime
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Any) -> RolloutRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class InstanceRecord:
    """A running TMS process and its last heartbeat (`instances`)."""
    id: str
    roles: list[str]
    host: str
    pid: int
    version: str
    info: dict[str, Any]
    started_at: datetime
    heartbeat_at: datetime

    @classmethod
    def of(cls, row: Any) -> InstanceRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class AlertRecord:
    """An alert of one type and subject: firing while its condition holds, then resolved (`alerts`)."""
    id: int
    kind: str
    severity: str
    subject: str
    table_id: int | None
    task_id: int | None
    message: str
    details: dict[str, Any]
    fingerprint: str
    count: int
    muted: bool
    created_at: datetime
    last_seen: datetime
    resolved_at: datetime | None
    delivered_at: datetime | None

    @property
    def state(self) -> str:
        return "firing" if self.resolved_at is None else "resolved"

    @property
    def type(self) -> str:
        return self.kind

    @classmethod
    def of(cls, row: Any) -> AlertRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class MuteRecord:
    """A rule muting the alerts that match every field it sets (`mutes`)."""
    id: int
    table_id: int | None
    database: str | None
    owner: str | None
    queue: str | None
    alert_types: list[str]
    reason: str
    created_at: datetime
    expires_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> MuteRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class TemplateRecord:
    """A policy template: the settings it gives the tables it matches (`policy_templates`)."""
    id: int
    name: str
    database: str | None
    name_pattern: str | None
    path_prefix: str | None
    policies: dict[str, Any]
    queue: str | None
    priority: int | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Any) -> TemplateRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class EventRecord:
    """An instant's state change reported by a writer (`events`)."""
    id: int
    table_id: int
    instant: str
    action: str
    state: str
    completion_time: str | None
    source: str
    write_stats: list[dict[str, Any]] | None
    extra_metadata: dict[str, Any] | None
    received_at: datetime
    processed_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> EventRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class AttemptRecord:
    """One execution attempt of a task: who ran it, where, and how it ended (`task_attempts`)."""
    id: int
    task_id: int
    attempt: int
    fencing_token: int
    worker: str
    queue: str | None
    requested_resources: dict[str, Any]
    spark_app_id: str | None
    engine_kind: str | None
    outcome: str
    error: str | None
    log_tail: str | None
    result: dict[str, Any] | None
    fence_key_hash: str | None
    engine: str | None
    rollout: str | None
    started_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> AttemptRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class WebhookRecord:
    """A webhook alerts are sent to (`webhooks`)."""
    id: int
    name: str | None
    url: str
    kinds: list[str] | None
    min_severity: str
    format: str
    secret: str | None
    enabled: bool
    created_at: datetime

    @classmethod
    def of(cls, row: Any) -> WebhookRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class DeliveryRecord:
    """One alert's firing or resolution to send to one webhook (the outbox) (`webhook_deliveries`)."""
    id: int
    webhook_id: int
    alert_id: int
    event: str
    body: str
    state: str
    attempts: int
    attempt_log: list[dict[str, Any]]
    next_attempt_at: datetime
    created_at: datetime
    delivered_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> DeliveryRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class HealthScore:
    """A table's last health score (`table_health`)."""
    table_id: int
    score: int
    status: str
    reasons: list[dict[str, Any]]
    checked_at: datetime

    @classmethod
    def of(cls, row: Any) -> HealthScore:
        return record_of(cls, row)


@dataclass(frozen=True)
class HealthSampleRecord:
    """One health score of a table, kept for the trend charts (`health_samples`)."""
    id: int
    table_id: int
    sampled_at: datetime
    score: int
    status: str
    log_bytes: int | None
    log_files: int | None
    oldest_uncompacted_seconds: float | None

    @classmethod
    def of(cls, row: Any) -> HealthSampleRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class TokenRecord:
    """An API token: its role and the hash of its secret (`api_tokens`)."""
    id: int
    name: str
    role: str
    token_hash: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> TokenRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class DiscoveredRecord:
    """A Hudi table found under a discovery root, and what became of it (`discovered_tables`)."""
    base_path: str
    root: str
    state: str
    reason: str | None
    table_id: int | None
    first_seen_at: datetime
    last_seen_at: datetime

    @classmethod
    def of(cls, row: Any) -> DiscoveredRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class ShadowRunRecord:
    """A shadow comparison of a canary's output with the stable engine's (`shadow_runs`)."""
    id: int
    task_id: int
    attempt: int
    rollout: str
    canary_engine: str
    stable_engine: str
    outcome: str
    first_differing_key: str | None
    detail: str | None
    groups: list[dict[str, Any]]
    created_at: datetime

    @classmethod
    def of(cls, row: Any) -> ShadowRunRecord:
        return record_of(cls, row)


@dataclass(frozen=True)
class LeaseRecord:
    """A named lease (the manager's leadership): who holds it, until when (`leases`)."""
    name: str
    holder: str | None
    epoch: int
    expires_at: datetime | None
    acquired_at: datetime | None
    last_work_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> LeaseRecord:
        return record_of(cls, row)


def table_of(row: Any | None) -> TableRecord | None:
    return None if row is None else TableRecord.of(row)


def tables_of(rows: Iterable[Any]) -> list[TableRecord]:
    return [TableRecord.of(row) for row in rows]


def task_of(row: Any | None) -> TaskRecord | None:
    return None if row is None else TaskRecord.of(row)


def tasks_of(rows: Iterable[Any]) -> list[TaskRecord]:
    return [TaskRecord.of(row) for row in rows]


def records_of(record_type: type[R], rows: Iterable[Any]) -> list[R]:
    """The records of `rows`, of a type whose columns need no parsing."""
    return [record_of(record_type, row) for row in rows]


def maybe_of(record_type: type[R], row: Any | None) -> R | None:
    return None if row is None else record_of(record_type, row)
