"""Task bodies."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, computed_field

from tms.table_service import TableService

from .common import Record


class AttemptOut(Record):
    attempt: int
    fencing_token: int
    worker: str
    queue: str | None
    requested_resources: dict[str, Any]
    spark_app_id: str | None
    engine_kind: str | None = Field(description="warm (the queue's warm engine) or dedicated (a spark-submit)")
    outcome: str
    error: str | None
    log_tail: str | None
    result: dict[str, Any] | None = Field(None, description="What the job reported: the instant it completed "
                                          "(completed_as, completion_time), tasks, files and bytes written, "
                                          "files deleted")
    started_at: datetime
    finished_at: datetime | None
    engine: str | None = Field(None, description="The registered engine that ran it (null: the worker's own code)")
    rollout: str | None = Field(None, description="The rollout rule that chose the engine")


class TaskOut(Record):
    id: int
    table_id: int
    service: TableService = Field(description="The table service this task runs")
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
    lease_owner: str | None
    lease_expires_at: datetime | None
    fencing_token: int
    spark_app_id: str | None
    run_after: datetime | None
    error: str | None
    failure_kind: str | None = Field(None, description=(
        "How the last failure was classified (crash, timeout, oom, lost_executors, fenced, lock_unavailable, "
        "stopped, missing_files, ...; conflict: a write won over the plan, which was rolled back, not retried)"))
    retryable: bool | None = None
    retry_reason: str | None = Field(None, description="Why (and when) the task is retried, or not")
    next_attempt_at: datetime | None = Field(None, description="When the manager makes it runnable again")
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def action(self) -> TableService:
        """Deprecated: the same as `service`, under its older name (kept for clients written before it)."""
        return self.service


class TaskDetail(TaskOut):
    attempts: list[AttemptOut]


class FenceOut(BaseModel):
    task_id: int
    fencing_token: int
    holds: bool


class TaskPage(BaseModel):
    items: list[TaskOut]
    total: int | None = Field(description="Rows matching the filters; null on the pages after a cursor")
    limit: int
    offset: int
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last")
