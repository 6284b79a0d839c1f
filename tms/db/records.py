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
    plan_stats: dict[str, Any]
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

    @classmethod
    def of(cls, row: Any) -> TaskRecord:
        return record_of(cls, row, service=TableService(row.service))


def table_of(row: Any | None) -> TableRecord | None:
    return None if row is None else TableRecord.of(row)


def tables_of(rows: Iterable[Any]) -> list[TableRecord]:
    return [TableRecord.of(row) for row in rows]


def task_of(row: Any | None) -> TaskRecord | None:
    return None if row is None else TaskRecord.of(row)


def tasks_of(rows: Iterable[Any]) -> list[TaskRecord]:
    return [TaskRecord.of(row) for row in rows]
