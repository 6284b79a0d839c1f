"""Table registration, listing, detail and policy bodies."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from tms.table_service import PLANNED_SERVICES, TableService

from .common import BasePath, BodyBool, BodyInt, JsonObject, Record, ShortText, never_null
from .policies import policies_schema
from .tasks import TaskOut


class TableRegistration(BaseModel):
    base_path: BasePath = Field(description="Absolute path or URL of the table (the folder holding .hoodie)")
    enabled: BodyBool = True
    priority: BodyInt = Field(0, ge=-1000, le=1000, description="Higher runs first; reserved queues by priority")
    queue: ShortText | None = Field(None, description="Preferred resource queue")
    owner: ShortText | None = Field(None, description="Who answers for the table (alert mutes can match it)")
    policies: JsonObject = Field(default_factory=dict, json_schema_extra=policies_schema, description=(
        "Hudi option name -> value: TMS's policy options, and the writers' concurrency control "
        "(hoodie.write.lock.provider and its hoodie.write.lock.* options, hoodie.write.concurrency.mode), "
        "under which TMS plans, completes and rolls back; a lock provider TMS cannot share is refused (422)"))
    callback_key: ShortText | None = Field(
        None, min_length=8, description="A HUDI-CALLBACK-KEY accepted for this table only")


class TableChanges(BaseModel):
    """Only the fields given change. In `policies`, an option set to null returns to its default."""

    enabled: BodyBool | None = Field(None, json_schema_extra=never_null)
    priority: BodyInt | None = Field(None, ge=-1000, le=1000, json_schema_extra=never_null)
    queue: ShortText | None = None
    owner: ShortText | None = None
    policies: JsonObject | None = Field(None, json_schema_extra=policies_schema)
    callback_key: ShortText | None = Field(None, min_length=8, description="null removes the table's key")

    @field_validator("enabled", "priority")
    @classmethod
    def _not_null(cls, value):
        if value is None:  # only an explicit null reaches here; absent fields are not validated
            raise ValueError("must not be null")
        return value


class TableOut(Record):
    id: int
    base_path: str
    name: str
    database: str
    table_type: str
    table_version: int
    record_key_fields: list[str]
    partition_fields: list[str]
    ordering_fields: list[str]
    merge_mode: str | None
    enabled: bool
    priority: int
    queue: str | None
    owner: str | None = None
    has_callback_key: bool
    policies: dict[str, Any] = Field(description="Every policy option with its effective value, and the "
                                                 "concurrency-control options (hoodie.write.lock.*) as set")
    template: str | None = Field(None, description="The policy template that applies to the table (null: none)")
    sources: dict[str, str] = Field(default_factory=dict, description=(
        "Where each of `policies`, `queue` and `priority` comes from: `table` (set on the table), "
        "`template:<name>` (its policy template) or `default`"))
    created_at: datetime
    updated_at: datetime


class CapabilityOut(BaseModel):
    can_run: bool
    reason: str = Field(description="Why TMS cannot run it, in one line (empty when it can)")
    engine: str | None = Field(default=None, description="The Hudi engine (kind hudi) that runs it on the table "
                               "where TMS's own engine cannot (`reason` then says why TMS cannot)")
    scheduled: bool | None = Field(default=None, description="Whether TMS's planner schedules it on its own on the "
                                   "table (null: not a service the planner schedules)")
    not_scheduled_reason: str = Field(default="", description=(
        "Why the planner does not schedule it on its own, in one line (empty when it does), e.g. clustering not "
        "asked for by the table's policy; POST /api/v1/tables/{id}:plan plans it all the same"))


CAPABILITIES_DESCRIPTION = ("What TMS can do for the table, decided from its hoodie.properties: `reading` and each "
                            "table service, whether TMS runs it and, if not, why")


WRITER_OPTIONS_DESCRIPTION = (
    "The Hudi writer options that send the table's commits to TMS as they complete (Hudi's HTTP commit callback): "
    "hoodie.write.commit.callback.on, ...http.url (TMS_PUBLIC_URL's /api/v1/hudi/callback) and ...http.api.key, "
    "whose value says where the key is (never the key); without them the table's commits reach TMS only by the "
    "planner's periodic pass (TMS_PLANNER_SCAN_SECONDS)")


class TableRegistered(TableOut):
    capabilities: dict[str, CapabilityOut] = Field(description=CAPABILITIES_DESCRIPTION)
    writer_options: dict[str, str] = Field(description=WRITER_OPTIONS_DESCRIPTION)


class TablePage(BaseModel):
    items: list[TableOut]
    total: int | None = Field(description="Rows matching the filters; null on the pages after a cursor")
    limit: int
    offset: int
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last")


class InstantOut(BaseModel):
    instant: str
    action: str
    state: str
    completion_time: str | None = None
    time: datetime | None = Field(None, description="The moment the instant time names (a wall-clock time in the "
                                                    "table's timeline zone), in UTC")


class TimelineSummary(BaseModel):
    instants: int
    completed: int
    pending: int
    by_action: dict[str, dict[str, int]] = Field(description="action -> state -> count")
    first_instant: str | None
    last_completed: InstantOut | None


class FileGroupOut(BaseModel):
    partition: str
    file_id: str
    base_file: str | None
    base_size: int
    log_count: int
    log_bytes: int
    num_records: int | None
    base_instant: str | None


class FileGroupSummary(BaseModel):
    file_groups: int
    partitions: int
    base_bytes: int
    log_files: int
    log_bytes: int
    largest_file_group_bytes: int
    largest: list[FileGroupOut] = Field(description="The largest file groups (base + logs), at most 20, of the "
                                                    "partitions read")
    sampled: bool = Field(False, description=(
        "true: the table has more partitions than the view reads (a giant table), and the counts and bytes above "
        "are estimated from an evenly spaced sample of them, `partitions_read`; false: they are exact"))
    partitions_read: int = Field(0, description="The partitions whose file groups were read")


class Health(BaseModel):
    status: str = Field(description="ok | warning | error")
    reasons: list[str]
    score: int | None = Field(None, description="0-100 (100: nothing to say; below 80: warning), each reason taking "
                                                "its penalty off: pending logs per file group, the oldest "
                                                "uncompacted delta commit, small files, size skew, failed and held "
                                                "plans, clean lag, orphan files (null: the table cannot be read)")


class TtlScheduleOut(BaseModel):
    service: str = Field(description="`partition_ttl` or `ttl` (record TTL)")
    interval_hours: int = Field(description="Requested once per this many hours (tms.ttl.interval.hours)")
    last_task_id: int | None = Field(None, description="The newest task of this TTL service")
    last_state: str | None = None
    last_requested_at: datetime | None = None
    last_finished_at: datetime | None = None
    next_due: datetime | None = Field(None, description="When the manager's leader requests the next one (null: at "
                                                        "its next look, every TMS_MANAGER_TTL_SECONDS)")


class TtlStateOut(BaseModel):
    record_ttl_cutoff: datetime | None = Field(description="Records whose tms.ttl.field is before this have expired "
                                                           "(null: no record TTL)")
    last_record_ttl: str | None = Field(description="The last instant that dropped or deleted expired records "
                                                    "(a compaction, a clustering or the TTL task's delete commit)")
    last_partition_delete: str | None = Field(description="The last delete_partition replacecommit")
    expired_partitions: list[str] = Field(description="Partitions expired now and not deleted yet, oldest first "
                                                      "(the first 20)")
    expired_partitions_total: int
    schedule: list[TtlScheduleOut] = Field([], description="The TTL tasks TMS runs on schedule: the last, the next")


class ServiceOutlookOut(BaseModel):
    """The planner's outlook on one service of the table, as it decided at its last look (kept with the table's
    digest; tms.planning.outlook)."""
    scheduled: bool = Field(description="The planner schedules this service on the table (TMS_PLANNER_SERVICES, "
                                        "and compaction only on MERGE_ON_READ)")
    due: bool = Field(description="The service's trigger held at the planner's last look: its next pass attempts it")
    next_due: datetime | None = Field(description="When time alone makes the service due (a time-based compaction "
                                                  "trigger, a pending write's heartbeat expiry); null when it is "
                                                  "due already or only writes make it due")
    writes_until_due: int | None = Field(description="Completed writes (delta commits for compaction) its trigger "
                                                     "still needs; null when writes do not make it due")
    reason: str = Field(description="Why it is not planned now (or that it is due), in one line: what the trigger "
                                    "counted since when, and what the planner found at its last attempt that "
                                    "planned nothing (e.g. nothing to clean, and why)")


class TableDetail(TableOut):
    properties: dict[str, str]
    timeline: TimelineSummary | None
    pending_instants: list[InstantOut]
    inflight_writes: list[InstantOut]
    file_group_stats: FileGroupSummary | None = Field(
        description="None when the table's file groups cannot be listed (see health)")
    tasks_by_state: dict[str, int]
    capabilities: dict[str, CapabilityOut] | None = Field(
        description=CAPABILITIES_DESCRIPTION + " (as the table's properties are now; null when it cannot be read)")
    health: Health
    ttl: TtlStateOut | None = Field(None, description="Record and partition TTL (null: no TTL policy set)")
    services: dict[str, ServiceOutlookOut] = Field(
        description="Per service (compaction, clustering, clean, rollback, archive): the planner's outlook, when it is "
                    "next due and why it is not planned now, as the planner decided it at its last pass over the "
                    "table")
    writer_options: dict[str, str] = Field(description=WRITER_OPTIONS_DESCRIPTION)
    last_event_at: datetime | None = Field(description=(
        "When the table's writers last sent TMS an event (a commit callback or POST /api/v1/events); null: none "
        "yet, its commits reach TMS only by the planner's periodic pass (TMS_PLANNER_SCAN_SECONDS)"))


def _planned_only(schema: dict[str, Any]) -> None:
    """The document lists the services a request may plan, as the validator below takes them."""
    schema.pop("$ref", None)
    schema.update(type="string", enum=[s.value for s in TableService if s in PLANNED_SERVICES])


class PlanRequest(BaseModel):
    service: TableService = Field(description="The table service to plan now, whatever its trigger says "
                                              "(a rollback: of the writes whose writer is gone)",
                                  json_schema_extra=_planned_only)

    @field_validator("service")
    @classmethod
    def _plannable(cls, value: TableService) -> TableService:
        if value is TableService.RESTORE:
            raise ValueError("a restore is asked for with POST /api/v1/tables/{id}/restore, not planned")
        if value not in PLANNED_SERVICES:
            raise ValueError(f"a {value} task is requested by the manager's schedule (or its own route), not planned")
        return value


class PlanResult(BaseModel):
    table_id: int
    service: TableService
    tasks: list[TaskOut] = Field(description="The tasks recorded: the new plan's, and those of plans found on "
                                             "the timeline without a task; empty when there was nothing to plan")
