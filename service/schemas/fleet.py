"""The fleet's health (worst tables first, and over time) and a table's orphan files."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .common import Id, Record


class HealthReasonOut(BaseModel):
    kind: str = Field(description="log_backlog | uncompacted_age | small_files | size_skew | failed_plans | "
                                  "held_plans | clean_lag | orphan_files | unreadable")
    penalty: int = Field(description="What it took off the score")
    message: str


class TableHealthOut(BaseModel):
    table_id: int
    database: str
    name: str
    base_path: str
    enabled: bool
    score: int | None = Field(description="0-100; below 80: warning; 0 with `unreadable`: the table cannot be "
                                          "read; null: not scored yet")
    status: str = Field(description="ok | warning | error | unscored (registered since the last scoring round)")
    reasons: list[HealthReasonOut]
    checked_at: datetime | None = Field(description="When it was scored (null: not yet)")


class FleetHealth(BaseModel):
    by_status: dict[str, int] = Field(description="Tables per status of their last score (`unscored`: not yet)")
    items: list[TableHealthOut] = Field(description="The tables, worst first after those not scored yet")


class FleetHourOut(BaseModel):
    hour: datetime = Field(description="The hour's start (UTC)")
    tables_by_status: dict[str, int] = Field(description="Tables per status, each as its last score in the hour")
    log_bytes: int = Field(description="Log bytes not yet compacted, summed over those scores")
    log_files: int


class FleetBacklog(BaseModel):
    hours: int
    items: list[FleetHourOut] = Field(description="Hours with scores, oldest first")


class HealthSampleOut(Record):
    sampled_at: datetime
    score: int
    status: str
    log_bytes: int | None = Field(description="Log bytes not yet compacted (null: the table could not be read)")
    log_files: int | None
    oldest_uncompacted_seconds: float | None = Field(
        description="Age of the oldest delta commit no compaction took (null: none, or unreadable)")


class TableHealthHistory(BaseModel):
    table_id: int
    hours: int
    samples: list[HealthSampleOut] = Field(description="Its scores, oldest first")


class ScoreRequest(BaseModel):
    table_ids: list[Id] | None = Field(None, max_length=500, description="The tables to score now (null: the "
                                                                         "TMS_HEALTH_BATCH scored longest ago)")


class OrphanOut(BaseModel):
    path: str = Field(description="Relative to the table's base path")
    size: int
    instant: str = Field(description="The instant its name says wrote it (not on the timeline)")
    modified_at: datetime


class OrphanReport(BaseModel):
    table_id: int
    safety_hours: float = Field(description="Files younger than this are not counted (TMS_ORPHAN_SAFETY_HOURS)")
    orphans: list[OrphanOut]
    total_bytes: int


class OrphanRemoval(BaseModel):
    paths: list[str] = Field(min_length=1, max_length=10_000, description=(
        "The orphans to remove, as GET .../orphans listed them: the admin's approval of each file. Only those "
        "still orphans now (same size and time) are deleted"))


class OrphansRemoved(BaseModel):
    table_id: int
    removed: list[OrphanOut]
    kept: list[str] = Field(description="Paths asked for that are not orphans (any more): left alone")
