"""Policy templates: rules by database, table-name pattern or path prefix that give tables their settings."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from .common import BasePath, BodyInt, JsonObject, Record, ShortText
from .policies import template_policies_schema


class TemplateIn(BaseModel):
    database: ShortText | None = Field(None, description="Tables of this database")
    name_pattern: ShortText | None = Field(
        None, description="Tables whose name (or database.name) matches this pattern (`*`, `?`, `[...]`)")
    path_prefix: BasePath | None = Field(None, max_length=4096, description=(
        "Tables whose base path lies under this folder (an absolute path or a URL, as a base path)"))
    policies: JsonObject = Field(default_factory=dict, json_schema_extra=template_policies_schema, description=(
        "Hudi option name -> value, as a table's `policies`: TMS's policy options and the writers' lock options "
        "(taken as a group: a table with lock options of its own takes none of these)"))
    queue: ShortText | None = Field(None, description="The tables' resource queue")
    priority: BodyInt | None = Field(None, ge=-1000, le=1000, description="The tables' priority")


class TemplateOut(Record):
    name: str
    database: str | None
    name_pattern: str | None
    path_prefix: str | None
    policies: dict[str, Any]
    queue: str | None
    priority: int | None
    created_at: datetime
    updated_at: datetime
    tables: int = Field(0, description="The registered tables it applies to")


class TemplatePut(TemplateOut):
    changed: int = Field(description="Tables whose effective settings this change changed")
