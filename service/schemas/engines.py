"""Engines (which Spark and which job code version run a task) and rollout rules (which tasks run on which
engine, with a canary share)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from .common import BodyBool, BodyFloat, BodyInt, Record, ShortText

EngineName = Field(max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")


class EngineIn(BaseModel):
    kind: Literal["tms", "hudi"] = Field(
        "tms", description="tms: TMS's job code; hudi: Hudi's Spark SQL procedures execute TMS's compaction and "
                           "clustering plans (needs spark_submit or spark_home and Hudi's bundle in spark_conf)")
    spark_home: ShortText | None = Field(None, description="A Spark distribution; its bin/spark-submit is used")
    spark_submit: ShortText | None = Field(
        None, description="The spark-submit to use (over spark_home's); neither: the worker's own Spark")
    pyspark_version: ShortText | None = Field(
        None, description="The PySpark (Spark) version; checked against spark_home when it says its version")
    code_version: ShortText = Field(description="The version of the job code, e.g. 1.4.0 or a commit id")
    code_path: ShortText | None = Field(
        None, description="A folder or zip holding that version's `jobs` package (and optionally `tms`); "
                          "unset: <TMS_ENGINE_CODE_DIR>/<code_version>[.zip]. A hudi engine has none")
    spark_conf: dict[ShortText, ShortText] = Field(default_factory=dict, description="Extra Spark confs")


class EngineResultsOut(BaseModel):
    finished: int = Field(description="Attempts that succeeded or failed")
    failed: int
    success_rate: float | None = Field(description="Succeeded / finished; null without finished attempts")
    mean_seconds: float | None
    p50_seconds: float | None
    p95_seconds: float | None


class EngineOut(Record):
    name: str
    kind: str
    spark_home: str | None
    spark_submit: str | None
    pyspark_version: str | None
    code_version: str
    code_path: str = Field(description="The job code's resolved location")
    spark_conf: dict[str, str]
    created_at: datetime
    updated_at: datetime
    results: EngineResultsOut | None = Field(None, description="Its attempts of the last day")


class RolloutIn(BaseModel):
    queue: ShortText | None = Field(None, description="The rule applies to tasks run on this queue")
    database: ShortText | None = Field(None, description="... of tables of this database")
    table: ShortText | None = Field(None, description="... of this table (database.table, or its name)")
    stable_engine: ShortText
    canary_engine: ShortText | None = None
    canary_percent: BodyInt = Field(0, ge=0, le=100, description="Share of the tasks run on the canary")
    shadow: BodyBool = Field(
        False, description="Run the canary in shadow: its share of compactions and clusterings also runs on the "
                           "stable engine, whose result alone is committed; the canary runs the same plan on a "
                           "scratch copy and a result that differs rolls the rule back")
    failure_margin: BodyFloat | None = Field(
        None, ge=0, le=1, description="Roll the canary back when its failure rate exceeds the stable engine's by "
                                      "more than this; unset: TMS_CANARY_FAILURE_MARGIN")
    min_tasks: BodyInt | None = Field(
        None, ge=1, le=1_000_000, description="Finished canary attempts before judging; unset: TMS_CANARY_MIN_TASKS")


class RolloutOut(Record):
    name: str
    queue: str | None
    database: str | None
    table: str | None = Field(validation_alias="table_name")
    stable_engine: str
    canary_engine: str | None
    canary_percent: int
    shadow: bool
    failure_margin: float
    min_tasks: int
    state: str = Field(description="active | rolled_back (every task on the stable engine)")
    since: datetime = Field(description="Results count from here (the rule's last PUT)")
    rolled_back_at: datetime | None
    rollback_reason: str | None
    results: dict[str, EngineResultsOut] = Field(
        default_factory=dict, description="Per engine, the attempts this rule chose since `since`")
    shadow_results: ShadowResultsOut | None = Field(None, description="A shadow rule's shadow runs since `since`")


class ShadowResultsOut(BaseModel):
    finished: int = Field(description="Shadow runs that ended (agreed, differed or failed)")
    failed: int = Field(description="... in which the canary produced no result")
    differed: int = Field(description="... whose result differed from the stable engine's")


class ShadowRunOut(Record):
    task_id: int
    attempt: int
    canary_engine: str
    stable_engine: str
    outcome: str = Field(description="agreed | differed | failed")
    first_differing_key: str | None
    detail: str | None = Field(description="Where the results first differ, or why the canary failed")
    groups: list[dict[str, Any]] = Field(
        description="Per file group (compaction) or partition (clustering): rows, keys and a hash on each side")
    created_at: datetime
