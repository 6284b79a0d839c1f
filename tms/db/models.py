"""The metadata database: SQLAlchemy 2 models of everything TMS records about its own work.

The timeline on storage stays the truth about each table; these rows are the truth about the
service's work (design invariant 1). Migrations in `migrations/versions` create exactly this schema
(a test compares them)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import DateTime

from .states import TaskState

# Deterministic constraint names, so migrations can refer to them.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

INSTANT = String(17)  # yyyyMMddHHmmssSSS (or the 14-digit form of old tables)
ROLES = ("viewer", "operator", "admin")
SEVERITIES = ("info", "warning", "critical")
EVENT_STATES = ("requested", "inflight", "completed")
EVENT_SOURCES = ("hudi_callback", "api")
ATTEMPT_OUTCOMES = ("RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "LOST")
WEBHOOK_FORMATS = ("json", "slack")
DELIVERY_STATES = ("pending", "delivered", "expired")
ROLLOUT_STATES = ("active", "rolled_back")
SHADOW_OUTCOMES = ("agreed", "differed", "failed")


ENGINE_KINDS = ("tms", "hudi")


def _one_of(column: str, values) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


def _updated() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), onupdate=func.now(),
                         nullable=False)


def _json(default: str = "{}") -> Mapped[Any]:
    return mapped_column(JSONB, server_default=text(f"'{default}'::jsonb"), nullable=False)


def _texts(nullable: bool = False) -> Mapped[Any]:
    if nullable:
        return mapped_column(ARRAY(Text), nullable=True)
    return mapped_column(ARRAY(Text), server_default=text("'{}'::text[]"), nullable=False)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class RegisteredTable(Base):
    """A Hudi table TMS manages: what `hoodie.properties` said at registration, and its policy."""

    __tablename__ = "tables"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    base_path: Mapped[str] = mapped_column(Text, unique=True)
    name: Mapped[str] = mapped_column(Text)
    database: Mapped[str] = mapped_column(Text)
    table_type: Mapped[str] = mapped_column(String(16))
    table_version: Mapped[int] = mapped_column(Integer)
    record_key_fields: Mapped[list[str]] = _texts()
    partition_fields: Mapped[list[str]] = _texts()
    ordering_fields: Mapped[list[str]] = _texts()
    merge_mode: Mapped[str | None] = mapped_column(String(32))
    properties: Mapped[dict[str, str]] = _json()
    policies: Mapped[dict[str, Any]] = _json()  # explicitly set options only (see TablePolicy)
    # The writers' lock and concurrency mode, Hudi names -> string values (see tms.hudi.locks.config)
    concurrency_options: Mapped[dict[str, str]] = _json()
    enabled: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    priority: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    queue: Mapped[str | None] = mapped_column(Text)  # preferred resource queue
    owner: Mapped[str | None] = mapped_column(Text)  # who answers for the table (alert mutes match it)
    # `policies`, `concurrency_options`, `queue` and `priority` above are the effective settings, what TMS uses:
    # the table's own settings (these, tms.planning.templates.own_settings) over its policy template's (`template`,
    # the name of the one that applied) over the defaults; kept in step by TableRepo.
    own_settings: Mapped[dict[str, Any]] = _json()
    template: Mapped[str | None] = mapped_column(Text)
    callback_key_hash: Mapped[str | None] = mapped_column(String(64))
    planner_state: Mapped[dict[str, Any]] = _json()  # the planner's incremental cursor, opaque here
    planned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # When time alone makes the periodic trigger find work on the table (its digest's next_tick_at), kept
    # with the digest; None: never (only events or the scan can). The trigger looks at due tables only.
    tick_due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The periodic trigger asked for by the manager's leader, done by whichever planner takes it first.
    tick_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The modification times of the timeline's folders when the planner last read it whole: the scan
    # rereads a table only when they changed (a stat, not a listing). None: read it.
    timeline_stamp: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        Index(None, "database", "name"),
        # The periodic trigger reads the due tables by time (keyset: time, id); the planners take the tables
        # the leader marked. Only the rows with a time are indexed.
        Index("ix_tables_tick_due", "tick_due_at", "id", postgresql_where=text("tick_due_at IS NOT NULL")),
        Index("ix_tables_tick_requested", "tick_requested_at", postgresql_where=text("tick_requested_at IS NOT NULL")),
        CheckConstraint(_one_of("table_type", ("COPY_ON_WRITE", "MERGE_ON_READ")), name="table_type"),
    )


class ScanRequest(Base):
    """One chunk of a reconciliation scan the manager's leader asked for: the enabled tables whose ids are
    in [first_table_id, last_table_id], taken (and deleted) by one planner."""

    __tablename__ = "scan_requests"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    first_table_id: Mapped[int] = mapped_column(BigInteger)
    last_table_id: Mapped[int] = mapped_column(BigInteger)
    requested_at: Mapped[datetime] = _created()


class Event(Base):
    """One instant state change reported by a writer: a hint, stored once per
    (table, instant, action, state) however often it arrives."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("tables.id", ondelete="CASCADE"))
    instant: Mapped[str] = mapped_column(INSTANT)
    action: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16))
    completion_time: Mapped[str | None] = mapped_column(INSTANT)
    source: Mapped[str] = mapped_column(String(16))
    write_stats: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB)
    extra_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    received_at: Mapped[datetime] = _created()
    processed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        UniqueConstraint("table_id", "instant", "action", "state"),
        # The planner's work list: events not yet processed, per table.
        Index("ix_events_unprocessed", "table_id", "id", postgresql_where=text("processed_at IS NULL")),
        Index(None, "received_at"),  # the retention's oldest first
        CheckConstraint(_one_of("state", EVENT_STATES), name="state"),
        CheckConstraint(_one_of("source", EVENT_SOURCES), name="source"),
    )


class Task(Base):
    """The service's work on one planned instant (compaction, clustering, clean, rollback)."""

    __tablename__ = "tasks"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    table_id: Mapped[int] = mapped_column(ForeignKey("tables.id", ondelete="CASCADE"))
    service: Mapped[str] = mapped_column(String(32))  # a TableService
    instant: Mapped[str] = mapped_column(INSTANT)
    target_instant: Mapped[str | None] = mapped_column(INSTANT)  # rollback: the failed instant it removes
    state: Mapped[str] = mapped_column(String(16), server_default=TaskState.PENDING.value)
    version: Mapped[int] = mapped_column(Integer, server_default=text("0"))  # bumped by every state change
    attempt: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    priority: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    queue: Mapped[str | None] = mapped_column(Text)
    requested_resources: Mapped[dict[str, Any]] = _json()
    plan_stats: Mapped[dict[str, Any]] = _json()
    blockers: Mapped[list[str]] = _texts()  # instants that must resolve before the task may run
    # TMS's planner wrote the plan (False: adopted, a writer's): only TMS's own plans are TMS's to roll back.
    planned_by_tms: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    lease_owner: Mapped[str | None] = mapped_column(Text)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    fencing_token: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    spark_app_id: Mapped[str | None] = mapped_column(Text)
    run_after: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # not claimed before this
    error: Mapped[str | None] = mapped_column(Text)
    # Retry: how the last failure was classified, and when the manager makes a retryable FAILED task
    # RUNNABLE again (None: not retried). Attempts since `retry_series_start` count against the limit.
    failure_kind: Mapped[str | None] = mapped_column(String(32))
    retryable: Mapped[bool | None] = mapped_column(Boolean)
    retry_reason: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retry_series_start: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    memory_factor: Mapped[float] = mapped_column(Float, server_default=text("1.0"))  # OOM retries grow it
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    attempts: Mapped[list[TaskAttempt]] = relationship(
        back_populates="task", order_by="TaskAttempt.attempt", passive_deletes=True)

    __table_args__ = (
        UniqueConstraint("table_id", "instant"),  # one task per instant, so adoption never duplicates
        Index(None, "table_id", "state"),
        # The claim's order: the most urgent first, then the oldest.
        Index("ix_tasks_runnable", text("priority DESC"), "id", postgresql_where=text("state = 'RUNNABLE'")),
        Index(None, "state", "id"),  # a list of one state's tasks, newest first
        Index("ix_tasks_running_lease", "lease_expires_at", postgresql_where=text("state = 'RUNNING'")),
        Index("ix_tasks_retry_due", "next_attempt_at", postgresql_where=text("state = 'FAILED'")),
        Index(None, "created_at"),
        CheckConstraint(_one_of("state", [s.value for s in TaskState]), name="state"),
    )


class TaskAttempt(Base):
    """One execution attempt of a task: who ran it, where, and how it ended."""

    __tablename__ = "task_attempts"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    fencing_token: Mapped[int] = mapped_column(BigInteger)
    worker: Mapped[str] = mapped_column(Text)
    queue: Mapped[str | None] = mapped_column(Text)
    requested_resources: Mapped[dict[str, Any]] = _json()
    spark_app_id: Mapped[str | None] = mapped_column(Text)
    # Where the job ran: "dedicated" (a spark-submit of its own) or "warm" (the queue's warm engine).
    engine_kind: Mapped[str | None] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(16), server_default="RUNNING")
    error: Mapped[str | None] = mapped_column(Text)
    log_tail: Mapped[str | None] = mapped_column(Text)
    # What the job reported of its result (tms/execute/job_result.py): the instant it completed, files and
    # bytes written; None when it reported none (it failed first).
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    # SHA-256 of the attempt's fence key: the secret its job shows when it asks the service whether its
    # fencing token still holds the lease (GET /api/v1/tasks/{id}/fence).
    fence_key_hash: Mapped[str | None] = mapped_column(String(64))
    # The engine that ran the attempt (None: the worker's own job code) and the rollout that chose it.
    engine: Mapped[str | None] = mapped_column(String(64))
    rollout: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = _created()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    task: Mapped[Task] = relationship(back_populates="attempts")

    __table_args__ = (
        UniqueConstraint("task_id", "attempt"),
        Index(None, "rollout", "started_at"),
        CheckConstraint(_one_of("outcome", ATTEMPT_OUTCOMES), name="outcome"),
    )



class ShadowRun(Base):
    """A shadow canary's run of one task's plan on a scratch copy, compared with the stable engine's committed
    result per file group (compaction) or partition (clustering): record keys, row count and a hash of the rows."""

    __tablename__ = "shadow_runs"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    rollout: Mapped[str] = mapped_column(String(64))
    canary_engine: Mapped[str] = mapped_column(String(64))
    stable_engine: Mapped[str] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))
    first_differing_key: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[str | None] = mapped_column(Text)  # why it differed or failed, in one line
    groups: Mapped[list[dict[str, Any]]] = _json("[]")  # per group compared: its rows, keys and hash on each side
    created_at: Mapped[datetime] = _created()

    __table_args__ = (
        Index(None, "rollout", "created_at"),
        Index(None, "task_id"),  # a task's deletion looks its shadow runs up
        CheckConstraint(_one_of("outcome", SHADOW_OUTCOMES), name="outcome"),
    )

class ResourceQueue(Base):
    """A place to run Spark jobs (local, standalone master, YARN queue, Kubernetes namespace)."""

    __tablename__ = "queues"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    master: Mapped[str] = mapped_column(Text)  # spark-submit --master
    spark_conf: Mapped[dict[str, str]] = _json()
    capacity: Mapped[int] = mapped_column(Integer, server_default=text("1"))  # concurrent jobs
    executor_cores: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    min_executor_memory_mb: Mapped[int] = mapped_column(Integer, server_default=text("512"))
    max_executor_memory_mb: Mapped[int] = mapped_column(Integer, server_default=text("8192"))
    max_executors: Mapped[int] = mapped_column(Integer, server_default=text("8"))
    # Tables with at least this priority get this queue first (a reserved queue); None: shared.
    reserved_for_priority: Mapped[int | None] = mapped_column(Integer)
    # Restrictions; None: no restriction.
    allowed_databases: Mapped[list[str] | None] = _texts(nullable=True)
    allowed_tables: Mapped[list[str] | None] = _texts(nullable=True)  # "database.table"
    allowed_services: Mapped[list[str] | None] = _texts(nullable=True)  # TableServices
    enabled: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    # The queue's warm engine: one long-running Spark application with fixed executors that runs the plans
    # whose sized job fits them, without a spark-submit of their own (worker/warm_engine.py).
    warm_engine_enabled: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    warm_engine_executors: Mapped[int] = mapped_column(Integer, server_default=text("2"))
    warm_engine_executor_memory_mb: Mapped[int] = mapped_column(Integer, server_default=text("1024"))
    warm_engine_executor_cores: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        CheckConstraint(_one_of("kind", ("local", "standalone", "yarn", "kubernetes")), name="kind"),
    )


class Engine(Base):
    """A registered execution engine: the Spark that runs a job (distribution or spark-submit) and the
    version of the job code it runs (a folder or zip holding the `jobs` package)."""

    __tablename__ = "engines"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    spark_home: Mapped[str | None] = mapped_column(Text)  # a Spark distribution (its bin/spark-submit)
    spark_submit: Mapped[str | None] = mapped_column(Text)  # or the spark-submit itself
    pyspark_version: Mapped[str | None] = mapped_column(Text)
    code_version: Mapped[str] = mapped_column(Text)
    code_path: Mapped[str] = mapped_column(Text)  # where that version of the job code is
    spark_conf: Mapped[dict[str, str]] = _json()
    # tms: TMS's job code; hudi: Hudi's procedures execute TMS's plan (tms/execute/hudi_engine.py)
    kind: Mapped[str] = mapped_column(String(16), server_default=text("'tms'"))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (CheckConstraint(_one_of("kind", ENGINE_KINDS), name="kind"),)


class Rollout(Base):
    """A rollout rule: the tasks of a queue, database or table (any combination; none: every task) run on
    `stable_engine`, except `canary_percent` of them (chosen by task id) on `canary_engine`. The manager's
    leader rolls the canary back (state `rolled_back`) when it fails more than the stable engine."""

    __tablename__ = "rollouts"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    queue: Mapped[str | None] = mapped_column(Text)
    database: Mapped[str | None] = mapped_column(Text)
    table_name: Mapped[str | None] = mapped_column(Text)
    stable_engine: Mapped[str] = mapped_column(ForeignKey("engines.name", ondelete="RESTRICT"))
    canary_engine: Mapped[str | None] = mapped_column(ForeignKey("engines.name", ondelete="RESTRICT"))
    canary_percent: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    # Shadow: the canary share runs on the stable engine, and the canary engine runs the same plan on a
    # scratch copy whose result is compared with the stable one's and never committed (`ShadowRun`).
    shadow: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    failure_margin: Mapped[float] = mapped_column(Float, server_default=text("0.2"))
    min_tasks: Mapped[int] = mapped_column(Integer, server_default=text("5"))
    state: Mapped[str] = mapped_column(String(16), server_default="active")
    rolled_back_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    rollback_reason: Mapped[str | None] = mapped_column(Text)
    # Canary and stable results count from here (set again by every PUT of the rule).
    since: Mapped[datetime] = _created()
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        CheckConstraint(_one_of("state", ROLLOUT_STATES), name="state"),
        CheckConstraint("canary_percent BETWEEN 0 AND 100", name="canary_percent"),
    )


class Instance(Base):
    """A running TMS process (service, planner, worker, manager) and its last heartbeat."""

    __tablename__ = "instances"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    roles: Mapped[list[str]] = _texts()
    host: Mapped[str] = mapped_column(Text)
    pid: Mapped[int] = mapped_column(Integer)
    version: Mapped[str] = mapped_column(Text)
    info: Mapped[dict[str, Any]] = _json()
    started_at: Mapped[datetime] = _created()
    heartbeat_at: Mapped[datetime] = _created()


class Lease(Base):
    """A named lease (the leader lease): one holder at a time; the epoch grows with each new holder
    so leader-only writes can check they still hold it."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    holder: Mapped[str | None] = mapped_column(Text)
    epoch: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    acquired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_work_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # the leader's last periodic run


class Alert(Base):
    """One alert per (type, subject) at a time: firing while its condition holds (`count` and `last_seen`
    grow with each sighting), resolved when it clears. `kind` is the alert's type."""

    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    severity: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(Text, server_default="")  # "table:3", "task:17", "queue:q", "instance:i"
    table_id: Mapped[int | None] = mapped_column(ForeignKey("tables.id", ondelete="CASCADE"))
    task_id: Mapped[int | None] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    message: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = _json()
    fingerprint: Mapped[str] = mapped_column(Text)  # same problem, same fingerprint: one open alert
    count: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    muted: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    created_at: Mapped[datetime] = _created()  # first seen
    last_seen: Mapped[datetime] = _created()
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("uq_alerts_open_fingerprint", "fingerprint", unique=True,
              postgresql_where=text("resolved_at IS NULL")),
        Index(None, "created_at"),
        Index(None, "table_id", "id"),  # a table's alerts, newest first
        Index(None, "task_id"),  # a task's alerts (the retention keeps a task an alert refers to)
        CheckConstraint(_one_of("severity", SEVERITIES), name="severity"),
    )

    @property
    def state(self) -> str:
        return "firing" if self.resolved_at is None else "resolved"

    @property
    def type(self) -> str:
        return self.kind


class Mute(Base):
    """A blacklist rule: alerts matching every non-null field (and one of `alert_types`, or any when it is
    empty) are recorded, marked muted, and not delivered."""

    __tablename__ = "mutes"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    table_id: Mapped[int | None] = mapped_column(ForeignKey("tables.id", ondelete="CASCADE"))
    database: Mapped[str | None] = mapped_column(Text)
    owner: Mapped[str | None] = mapped_column(Text)
    queue: Mapped[str | None] = mapped_column(Text)
    alert_types: Mapped[list[str]] = _texts()
    reason: Mapped[str] = mapped_column(Text, server_default="")
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Webhook(Base):
    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(Text)
    kinds: Mapped[list[str] | None] = _texts(nullable=True)  # alert types; None or empty: every type
    min_severity: Mapped[str] = mapped_column(String(16), server_default="warning")
    format: Mapped[str] = mapped_column(String(16), server_default="json")
    secret: Mapped[str | None] = mapped_column(Text)  # HMAC key for signing deliveries (needed in clear)
    enabled: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    created_at: Mapped[datetime] = _created()

    __table_args__ = (CheckConstraint(_one_of("min_severity", SEVERITIES), name="min_severity"),
                      CheckConstraint(_one_of("format", WEBHOOK_FORMATS), name="format"))


class WebhookDelivery(Base):
    """The outbox: one message (an alert firing or resolving) for one webhook, written in the alert's
    transaction and sent until delivered or expired. `body` is the exact payload signed and sent."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(16))  # firing | resolved
    body: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), server_default="pending")
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    attempt_log: Mapped[list[dict[str, Any]]] = _json("[]")  # each attempt: at, status, error
    next_attempt_at: Mapped[datetime] = _created()
    created_at: Mapped[datetime] = _created()
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_webhook_deliveries_pending", "next_attempt_at", postgresql_where=text("state = 'pending'")),
        Index(None, "webhook_id", "id"),
        Index(None, "alert_id"),  # an alert's deliveries (its deletion looks them up)
        Index(None, "created_at"),  # the retention's oldest first
        CheckConstraint(_one_of("state", DELIVERY_STATES), name="state"),
        CheckConstraint(_one_of("event", ("firing", "resolved")), name="event"),
    )


class ApiToken(Base):
    """A bearer token; only its SHA-256 is stored (tokens are random, so no salt or KDF is needed)."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (CheckConstraint(_one_of("role", ROLES), name="role"),)


class PolicyTemplate(Base):
    """A policy template: the tables of a database, a name pattern or a path prefix (any combination) get its
    policy and lock options (Hudi names), queue and priority, unless they set their own (tms.planning.templates)."""

    __tablename__ = "policy_templates"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    database: Mapped[str | None] = mapped_column(Text)
    name_pattern: Mapped[str | None] = mapped_column(Text)
    path_prefix: Mapped[str | None] = mapped_column(Text)
    policies: Mapped[dict[str, Any]] = _json()
    queue: Mapped[str | None] = mapped_column(Text)
    priority: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class HealthRecord(Base):
    """A table's last health score and its reasons (tms.planning.health), kept by the manager's leader for the
    fleet view and the metrics: `reasons` is a list of {kind, penalty, message}."""

    __tablename__ = "table_health"

    table_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tables.id", ondelete="CASCADE"), primary_key=True)
    score: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    reasons: Mapped[list[dict[str, Any]]] = _json("[]")
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (Index(None, "score", "table_id"),)



class HealthSample(Base):
    """One score of a table as it was taken (`HealthRecord` keeps only the last): the trend charts' points."""

    __tablename__ = "health_samples"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    table_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tables.id", ondelete="CASCADE"))
    sampled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    score: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    # The backlog: log bytes and files not yet compacted, and the age of the oldest delta commit no compaction
    # took (None: unknown, the table could not be read; or none pending).
    log_bytes: Mapped[int | None] = mapped_column(BigInteger)
    log_files: Mapped[int | None] = mapped_column(Integer)
    oldest_uncompacted_seconds: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (Index(None, "sampled_at"), Index(None, "table_id", "sampled_at"))

class DiscoveredTable(Base):
    """A Hudi table that discovery found under a storage root: registered (its table id), refused (TMS can do
    nothing for it: the reason), or missing (registered once, gone from storage since: disabled, never deleted)."""

    __tablename__ = "discovered_tables"

    base_path: Mapped[str] = mapped_column(Text, primary_key=True)
    root: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    table_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("tables.id", ondelete="SET NULL"))
    first_seen_at: Mapped[datetime] = _created()
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        Index(None, "root", "state"),
        CheckConstraint(_one_of("state", ("registered", "refused", "missing")), name="state"),
    )
