"""Queues, tokens and instances."""
from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, computed_field

from tms.table_service import TableService

from ..auth import Role
from .common import BodyBool, BodyInt, JsonObject, Record, ShortText


class QueueKind(StrEnum):
    LOCAL = "local"
    STANDALONE = "standalone"
    YARN = "yarn"
    KUBERNETES = "kubernetes"


class QueueIn(BaseModel):
    kind: QueueKind
    master: ShortText = Field(description="spark-submit --master, e.g. local[*], spark://host:7077, yarn")
    spark_conf: JsonObject = Field(default_factory=dict)
    capacity: BodyInt = Field(1, ge=1, le=10_000, description="Jobs running at once")
    executor_cores: BodyInt = Field(1, ge=1, le=1024)
    min_executor_memory_mb: BodyInt = Field(512, ge=1, le=2**31 - 1)
    max_executor_memory_mb: BodyInt = Field(8192, ge=1, le=2**31 - 1)
    max_executors: BodyInt = Field(8, ge=1, le=100_000)
    reserved_for_priority: BodyInt | None = Field(None, ge=-1000, le=1000)
    allowed_databases: list[ShortText] | None = None
    allowed_tables: list[ShortText] | None = None
    allowed_services: list[TableService] | None = Field(
        None, validation_alias=AliasChoices("allowed_services", "allowed_actions"),
        description="The table services the queue runs (null: any); `allowed_actions` is accepted as its "
                    "deprecated alias")
    enabled: BodyBool = True
    warm_engine_enabled: BodyBool = Field(
        False, description="Keep a warm engine: one long-running Spark application with fixed executors that "
                           "runs the plans whose sized job fits them, without a spark-submit of their own")
    warm_engine_executors: BodyInt = Field(2, ge=1, le=1024, description="The warm engine's executors")
    warm_engine_executor_memory_mb: BodyInt = Field(1024, ge=256, le=2**31 - 1,
                                                    description="The warm engine's executor memory (MB)")
    warm_engine_executor_cores: BodyInt = Field(1, ge=1, le=1024, description="Cores of each warm executor")


class QueueOut(Record):
    name: str
    kind: str
    master: str
    spark_conf: dict[str, Any]
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
    running: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def allowed_actions(self) -> list[str] | None:
        """Deprecated: the same as `allowed_services`, under its older name."""
        return self.allowed_services


class TokenIn(BaseModel):
    role: Role
    name: ShortText = ""


class TokenOut(Record):
    id: int
    name: str
    role: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class NewToken(TokenOut):
    token: str = Field(description="The bearer token; shown only once")


class InstanceOut(Record):
    id: str
    roles: list[str]
    host: str
    pid: int
    version: str
    info: dict[str, Any]
    started_at: datetime
    heartbeat_at: datetime
