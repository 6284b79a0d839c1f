"""Savepoint and restore bodies."""
from __future__ import annotations

from pydantic import BaseModel, Field

from .common import InstantTime, ShortText


class SavepointOut(BaseModel):
    instant: str = Field(description="The instant time of the completed write the savepoint keeps")
    savepointed_by: str
    savepointed_at: int = Field(description="When it was made, epoch milliseconds")
    comments: str
    files: int = Field(description="The base and log files it keeps")


class SavepointRequest(BaseModel):
    instant: InstantTime | None = Field(None, description="The completed write to keep (default: the latest)")
    comment: ShortText = ""


class BackfillRequest(BaseModel):
    reason: ShortText = Field("", description="What the backfill is (kept as the savepoint's comment)")


class BackfillOut(BaseModel):
    table_id: int
    savepoint: SavepointOut = Field(description="The savepoint of the latest completed write, kept until the "
                                                "backfill is ended (DELETE .../backfills/{instant})")
    created: bool = Field(description="False: that write had a backfill's savepoint already (it is answered)")
