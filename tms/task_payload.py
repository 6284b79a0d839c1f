"""A task's payload, typed per table service (`tasks.plan_stats`): the planner's statistics of a timeline plan
(what the worker sizes the job by) or the request of a service whose task names its request (a backup's root, a
TTL's policy, an archival's bound). The two never share a task: the task's service says which it holds, so the
stored JSON keeps its shape (no migration) and `TaskPayload` is a union discriminated on the service.

Every field is optional as stored: tasks recorded by earlier versions (or adopted without statistics) read as
they did, and keys this version does not know are kept (`extra="allow"`), so a payload written back, or shown
by the API, is the JSON that was stored."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .table_service import TableService, names_request

_STORED = ConfigDict(frozen=True, extra="allow")


class _Stored(BaseModel):
    model_config = _STORED

    def stored(self) -> dict[str, Any]:
        """The JSON stored in `tasks.plan_stats`: the keys set, as they were set."""
        return self.model_dump(mode="json", exclude_unset=True)


class PlanStatistics(_Stored):
    """A timeline plan's statistics (tms.planning.stats.PlanStats): how many operations, the bytes each reads,
    the largest file group. None where the task was recorded without them."""
    operations: int | None = None
    operation_bytes: tuple[int, ...] = ()
    largest_file_group_bytes: int | None = None
    total_bytes: int | None = None
    # The plan's merges stream within the job's memory budget (None: recorded before the flag existed).
    within_budget: bool | None = None

    @property
    def measured(self) -> bool:
        """Whether the planner measured the plan (a task recorded without statistics is measured at its claim)."""
        return self.largest_file_group_bytes is not None

    @property
    def plan_bytes(self) -> int:
        """The bytes the plan reads."""
        return self.total_bytes or sum(self.operation_bytes)


# The statistics of a task that runs as one operation sized minimally (a restore in place, an index build).
ONE_OPERATION = PlanStatistics(operations=1, largest_file_group_bytes=0, operation_bytes=())


class _Request(_Stored):
    # When it was requested, on the requester's clock (tms.db.repos.requested: added as the task is recorded).
    requested_at: str | None = None


class BackupRequest(_Request):
    """A backup, backup_clean or backup_restore (tms.backup.requests): the backups' root and how many versions
    it keeps; a restore's version (or savepoint) and target."""
    root: str | None = None
    keep_versions: int | None = None
    version: int | None = None
    target_path: str | None = None
    catch_up: bool = False
    savepoint: str | None = None


class TtlRequest(_Request):
    """A TTL task (tms.planning.ttl_schedule): the policy's TTL options and the moment the TTL counts from."""
    policy: dict[str, Any] = {}
    now: str | None = None


class ArchiveRequest(_Request):
    """An archival (tms.plan_pass.records): the latest instant it archives through, how many instants, and the
    table's explicit policy it archives by."""
    archive_through: str | None = None
    instants: int | None = None
    policy: dict[str, Any] = {}


RequestBody = BackupRequest | TtlRequest | ArchiveRequest
PayloadBody = PlanStatistics | RequestBody

_PLANNED = Literal[TableService.COMPACTION, TableService.CLUSTERING, TableService.CLEAN, TableService.ROLLBACK,
                   TableService.RESTORE, TableService.INDEXING]
_BACKUP = Literal[TableService.BACKUP, TableService.BACKUP_CLEAN, TableService.BACKUP_RESTORE]
_TTL = Literal[TableService.TTL, TableService.PARTITION_TTL]


class PlannedPayload(BaseModel):
    """The payload of a task whose instant is a plan on the timeline: its statistics."""
    model_config = ConfigDict(frozen=True)
    service: _PLANNED
    stats: PlanStatistics = PlanStatistics()

    @property
    def body(self) -> PlanStatistics:
        return self.stats


class BackupPayload(BaseModel):
    model_config = ConfigDict(frozen=True)
    service: _BACKUP
    request: BackupRequest = BackupRequest()

    @property
    def body(self) -> BackupRequest:
        return self.request


class TtlPayload(BaseModel):
    model_config = ConfigDict(frozen=True)
    service: _TTL
    request: TtlRequest = TtlRequest()

    @property
    def body(self) -> TtlRequest:
        return self.request


class ArchivePayload(BaseModel):
    model_config = ConfigDict(frozen=True)
    service: Literal[TableService.ARCHIVE]
    request: ArchiveRequest = ArchiveRequest()

    @property
    def body(self) -> ArchiveRequest:
        return self.request


TaskPayload = PlannedPayload | BackupPayload | TtlPayload | ArchivePayload
_PAYLOAD: TypeAdapter[TaskPayload] = TypeAdapter(Annotated[TaskPayload, Field(discriminator="service")])


def payload_of(service: str, stored: dict[str, Any] | PayloadBody | None) -> TaskPayload:
    """The typed payload of a task of `service` from its stored JSON, or from a body built for it (ValueError if
    it is another service's); a ValidationError if the JSON does not fit the service's model."""
    body = stored.stored() if isinstance(stored, BaseModel) else stored
    field = "request" if names_request(service) else "stats"
    payload = _PAYLOAD.validate_python({"service": service, field: body or {}})
    if isinstance(stored, BaseModel) and type(payload.body) is not type(stored):
        raise ValueError(f"{service} task: its payload is {type(payload.body).__name__}, "
                         f"not {type(stored).__name__}")
    return payload


def statistics_of(payload: TaskPayload) -> PlanStatistics:
    """The statistics of the task's plan; none (empty) for a task that names its request: it has no plan on the
    timeline (its job is sized minimally)."""
    return payload.stats if isinstance(payload, PlannedPayload) else PlanStatistics()
