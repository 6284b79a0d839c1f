"""Discovery bodies."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .common import BasePath, BodyInt, JsonObject, Record
from .policies import policy_options_schema


class ScanRequest(BaseModel):
    root: BasePath | None = Field(None, description="The root to scan (under TMS_STORAGE_ROOTS); none: every "
                                                    "storage root")
    policies: JsonObject = Field(default_factory=dict, json_schema_extra=policy_options_schema,
                                 description="TMS's policy options the new tables get")
    max_depth: BodyInt = Field(4, ge=0, le=16, description="Folder levels below the root looked into")


class GlueSyncRequest(BaseModel):
    database: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00/]+$",
                          description="The Glue database whose Hudi tables are onboarded")
    policies: JsonObject = Field(default_factory=dict, json_schema_extra=policy_options_schema,
                                 description="TMS's policy options the new tables get (over their policy templates')")


class HiveSyncRequest(BaseModel):
    database: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00/]+$",
                          description="The Hive Metastore database whose Hudi tables are onboarded")
    policies: JsonObject = Field(default_factory=dict, json_schema_extra=policy_options_schema,
                                 description="TMS's policy options the new tables get (over their policy templates')")


class DiscoveredRef(BaseModel):
    base_path: str
    id: int | None = Field(None, description="The table's id (registered and missing tables)")
    reason: str | None = Field(None, description="Why TMS refuses it")


class ScanOut(BaseModel):
    root: str
    registered: list[DiscoveredRef] = Field(description="New tables registered by this scan")
    refused: list[DiscoveredRef] = Field(description="Tables TMS can do nothing for, with the reason")
    missing: list[DiscoveredRef] = Field(description="Registered tables gone from storage: disabled, not deleted")
    known: int = Field(description="Tables found again and left as they were")
    listings: int = Field(description="Folders listed (LIST requests on an object store)")


class ScanResult(BaseModel):
    scans: list[ScanOut]


class DiscoveredOut(Record):
    base_path: str
    root: str
    state: str = Field(description="registered | refused | missing")
    reason: str | None
    table_id: int | None
    first_seen_at: datetime
    last_seen_at: datetime


class DiscoveredPage(BaseModel):
    items: list[DiscoveredOut]
    total: int
    limit: int
    offset: int
