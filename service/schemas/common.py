"""Field types shared by the API's bodies and parameters: values PostgreSQL can store, so bad input
is a 422 naming its field rather than a database error."""
from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tms.hudi.instant import ACTIONS
from tms.table_path import normalize_base_path

MAX_ID = 2**63 - 1  # bigint


def _storable_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (no lone surrogates)") from None
    return value


def _storable_json(value: Any) -> Any:
    # PostgreSQL's jsonb rejects NaN and infinities, \u0000 and lone surrogates anywhere in a document.
    if value is not None:
        try:
            dumped = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except ValueError:
            raise ValueError("must not contain NaN or infinite numbers") from None
        _storable_text(dumped.replace("\\u0000", "\x00"))
    return value


def _base_path(value: str) -> str:
    return normalize_base_path(_storable_text(value))


def _instant(value: str) -> str:
    if not (value.isascii() and value.isdigit() and len(value) in (14, 17)):
        raise ValueError("must be an instant time: 17 digits (yyyyMMddHHmmssSSS) or 14 (yyyyMMddHHmmss)")
    return value


def _action(value: str) -> str:
    if value not in ACTIONS:
        raise ValueError(f"unknown action {value!r}; expected one of {', '.join(ACTIONS)}")
    return value


Text = Annotated[str, AfterValidator(_storable_text)]
ShortText = Annotated[str, Field(max_length=256), AfterValidator(_storable_text)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_storable_json)]
JsonObjects = Annotated[list[dict[str, Any]], AfterValidator(_storable_json)]
BasePath = Annotated[str, Field(examples=["/data/hudi/trips", "s3://bucket/warehouse/trips"]),
                     AfterValidator(_base_path)]
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
InstantTime = Annotated[str, Field(examples=["20250101120000123"]), AfterValidator(_instant)]
Action = Annotated[str, Field(examples=["deltacommit"]), AfterValidator(_action)]
Limit = Annotated[int, Field(ge=1, le=500)]
Offset = Annotated[int, Field(ge=0, le=MAX_ID)]


class Record(BaseModel):
    """A response body read from a database row."""

    model_config = ConfigDict(from_attributes=True)
