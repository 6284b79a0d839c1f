"""Event bodies: Hudi's native commit callback, and TMS's own event (which may also carry the
requested and inflight states a callback never reports)."""
from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .common import Action, BasePath, BodyId, InstantTime, JsonObject, JsonObjects, Text

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

    model_config = ConfigDict(extra="ignore")

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


class IngestResult(BaseModel):
    received: int = Field(description="Events in the request")
    stored: int = Field(description="Events recorded now")
    duplicates: int = Field(description="Events already recorded before (ignored)")


def hudi_action(callback: HudiCommitCallback) -> str | None:
    """The callback's action when Hudi sent it as a string, else None."""
    return callback.commitActionType if isinstance(callback.commitActionType, str) else None
