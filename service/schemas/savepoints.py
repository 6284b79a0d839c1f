"""Savepoint and restore bodies."""
from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from .common import BasePath, BodyBool, BodyInt, InstantTime, ShortText


class SavepointOut(BaseModel):
    instant: str = Field(description="The instant time of the completed write the savepoint keeps")
    savepointed_by: str
    savepointed_at: int = Field(description="When it was made, epoch milliseconds")
    comments: str
    files: int = Field(description="The base and log files it keeps")


class SavepointRequest(BaseModel):
    instant: InstantTime | None = Field(None, description="The completed write to keep (default: the latest)")
    comment: ShortText = ""


class RestoreRequest(BaseModel):
    """Exactly one of `version` (a backup version) and `savepoint`; to `target_path` or `in_place`."""

    version: BodyInt | None = Field(None, description="A backup version to restore")
    savepoint: InstantTime | None = Field(None, description="The savepoint (its instant time) to restore")
    target_path: BasePath | None = Field(None, description="A new base path to restore to")
    in_place: BodyBool = Field(False, description="Restore the table itself (Hudi's restore action)")
    force: BodyBool = Field(False, description="In place: roll back the writers' pending instants too")

    @model_validator(mode="after")
    def _one_source_one_target(self) -> RestoreRequest:
        if (self.version is None) == (self.savepoint is None):
            raise ValueError("give exactly one of version and savepoint")
        if self.in_place == (self.target_path is not None):
            raise ValueError("give exactly one of target_path and in_place: true")
        return self
