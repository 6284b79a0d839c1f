"""The restore request (`POST /api/v1/tables/{id}/restore`): of a backup version or to a savepoint."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .common import BasePath, BodyBool, BodyInt, InstantTime, exactly_one, present


class RestoreRequest(BaseModel):
    """Exactly one of `version` (a backup version) and `savepoint` (an instant); to `target_path` or `in_place`."""
    model_config = ConfigDict(extra="forbid", json_schema_extra={"allOf": [
        exactly_one("version", "savepoint"),
        {"oneOf": [present("target_path"), present("in_place", {"const": True})]},
        {"anyOf": [present("savepoint"), present("target_path")]},  # a backup version: to a target_path
        {"anyOf": [{"properties": {"catch_up": {"const": False}}}, {"allOf": [present("version"),
                                                                              present("target_path")]}]}]})

    version: BodyInt | None = Field(None, ge=1, description="A backup version of the table")
    savepoint: InstantTime | None = Field(None, description="The savepoint (its instant time) to restore")
    target_path: BasePath | None = Field(None, description="A new base path (empty or absent) to restore to")
    in_place: BodyBool = Field(False, description="Restore the table itself (Hudi's restore action)")
    force: BodyBool = Field(False, description="In place: roll back the writers' pending instants too")
    catch_up: BodyBool = Field(False, description="A backup version to a target_path: then apply the table's "
                                                  "instants completed since the version, so the copy reads as the "
                                                  "table does now")

    @model_validator(mode="after")
    def _one_source_one_target(self) -> RestoreRequest:
        if (self.version is None) == (self.savepoint is None):
            raise ValueError("give exactly one of version and savepoint")
        if self.in_place == (self.target_path is not None):
            raise ValueError("give exactly one of target_path and in_place: true")
        if self.catch_up and (self.version is None or self.target_path is None):
            raise ValueError("catch_up applies to a backup version restored to a target_path")
        return self
