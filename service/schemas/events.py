"""Event bodies: Hudi's native commit callback, and TMS's own event (which may also carry the
requested and inflight states a callback never reports)."""
from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import to_json

from tms.hudi.timeline.instant import ACTIONS

from .common import (
    INSTANT_PATTERN,
    Action,
    BasePath,
    BodyId,
    InstantTime,
    JsonObject,
    JsonObjects,
    Text,
    doubtful_json,
    exactly_one,
)

MAX_BATCH = 10_000


class EventState(StrEnum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"


class HudiCommitCallback(BaseModel):
    """`HoodieWriteCommitCallbackMessage` as Hudi's HTTP callback serialises it with Jackson.
    Fields Hudi adds in later versions are accepted and ignored."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"additionalProperties": True})

    commitTime: InstantTime
    tableName: Text
    basePath: BasePath
    hoodieWriteStat: JsonObjects | None = None
    # Hudi's Option<String>: Jackson writes it as {"present": true} without the value, so the action
    # is then inferred from the table type (commit for COPY_ON_WRITE, deltacommit for MERGE_ON_READ).
    commitActionType: Action | JsonObject | None = None
    extraMetadata: JsonObject | None = None


class EventIn(BaseModel):
    """One instant state change of one table (by `table_id` or `base_path`)."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=exactly_one("table_id", "base_path"))

    table_id: BodyId | None = None
    base_path: BasePath | None = None
    instant: InstantTime
    action: Action
    state: EventState = EventState.COMPLETED
    completion_time: InstantTime | None = None
    write_stats: JsonObjects | None = None
    extra_metadata: JsonObject | None = None

    @model_validator(mode="after")
    def _one_table_reference(self):
        if (self.table_id is None) == (self.base_path is None):
            raise ValueError("give exactly one of table_id and base_path")
        return self


class EventBatch(BaseModel):
    events: list[EventIn] = Field(min_length=1, max_length=MAX_BATCH)


# A batch of EventIn as pydantic-core alone (Rust) checks it: no Python validator per event. It accepts
# only what EventBatch accepts, with the same values; anything else goes to EventBatch for its exact error.
_CheckedInstant = Annotated[str, Field(pattern=INSTANT_PATTERN)]


class _CheckedEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    table_id: BodyId | None = None
    base_path: BasePath | None = None
    instant: _CheckedInstant
    action: Literal[ACTIONS]  # type: ignore[valid-type]
    state: EventState = EventState.COMPLETED
    completion_time: _CheckedInstant | None = None
    write_stats: list[dict[str, Any]] | None = None  # checked storable once for the whole batch
    extra_metadata: dict[str, Any] | None = None


class _CheckedBatch(BaseModel):
    events: list[_CheckedEvent] = Field(min_length=1, max_length=MAX_BATCH)


def checked_batch(body: bytes) -> list[_CheckedEvent] | None:
    """The events of a JSON EventBatch body when pydantic-core clears them all at once (the common
    case: a fraction of EventBatch's cost), else None: then EventBatch gives the answer."""
    try:
        events = _CheckedBatch.model_validate_json(body).events
    except ValidationError:
        return None
    if any((e.table_id is None) == (e.base_path is None) for e in events):
        return None
    if doubtful_json(to_json([(e.write_stats, e.extra_metadata) for e in events])):
        return None
    return events


class IngestResult(BaseModel):
    received: int = Field(description="Events in the request")
    stored: int = Field(description="Events recorded now")
    duplicates: int = Field(description="Events already recorded before (ignored)")


def hudi_action(callback: HudiCommitCallback) -> str | None:
    """The callback's action when Hudi sent it as a string, else None."""
    return callback.commitActionType if isinstance(callback.commitActionType, str) else None
