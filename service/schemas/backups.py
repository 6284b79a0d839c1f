"""Backup bodies: a table's backup policy, its versions, and the restore request."""
from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tms.planning.cron import parse_schedule

from .common import BasePath, BodyInt
from .tasks import TaskOut

_CRON_FIELD = r"[0-9A-Za-z*?,/-]+"
SCHEDULE_PATTERN = rf"^(daily|hourly|{_CRON_FIELD}( {_CRON_FIELD}){{4}})$"


class BackupPolicyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    destination: BasePath = Field(description="The root backups go under (another bucket or store may hold it); "
                                              "each table's versions under <destination>/<table name>-<id>")
    # The pattern in the document; the validator below refuses what breaks it in words a person reads.
    schedule: str = Field("daily", max_length=256, json_schema_extra={"pattern": SCHEDULE_PATTERN}, description=(
        "daily (00:00 UTC), hourly, or a cron expression: five fields (minute hour day month weekday, UTC) "
        "separated by single spaces, each of digits, names (jan, mon), `*`, `?`, `,`, `-` and `/`, read as "
        "cron reads them (weekdays 0-7 from Sunday); values outside their field's range are refused"))
    keep_versions: BodyInt = Field(7, ge=1, le=10_000, description="Versions kept; older ones are deleted by "
                                                                   "the backup-clean after each backup")

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        if not re.fullmatch(SCHEDULE_PATTERN, value):
            raise ValueError(f"backup schedule {value[:64]!r} is neither daily, hourly nor a cron expression (five "
                             f"fields, minute hour day month weekday, separated by single spaces)")
        parse_schedule(value)
        return value


class BackupPolicyOut(BaseModel):
    table_id: int
    destination: str
    schedule: str
    keep_versions: int
    root: str = Field(description="Where this table's versions are: <destination>/<table name>-<id>")


class BackupVersionOut(BaseModel):
    version: int
    instant: str = Field(description="The last completed instant the version holds")
    state: str = Field(description="complete: its manifest is written (every file it names is copied)")
    bytes_copied: int = Field(description="Bytes this version copied (what changed since the previous one)")
    files_copied: int
    files: int = Field(description="Files the version holds (copied by it or named from earlier versions)")
    total_bytes: int = Field(description="Bytes the version holds: a full copy's size")
    created_at: datetime


class BackupList(BaseModel):
    table_id: int
    root: str
    items: list[BackupVersionOut] = Field(description="The versions kept, oldest first")
    tasks: list[TaskOut] = Field(description="The table's newest backup, backup-clean and restore tasks, "
                                             "newest first (a version in progress is its running backup task)")
