"""Field types shared by the API's bodies and parameters: values PostgreSQL can store, so bad input
is a 422 naming its field rather than a database error."""
from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema
from pydantic_core import PydanticSerializationError, to_json

from tms.hudi.storage.paths import MAX_BASE_PATH_CHARS, normalize_base_path
from tms.hudi.timeline.instant import ACTIONS
from tms.hudi.timeline.instant import Action as TimelineAction

MAX_ID = 2**63 - 1  # bigint
# The validators below, as JSON Schema says them (for clients, the API docs and schemathesis).
# Text PostgreSQL can store: no NUL (nor a lone surrogate, which a pattern cannot say to every JSON Schema tool).
NO_NUL_PATTERN = r"^[^\u0000]*$"
# Any JSON value made only of such text (keys too), as a component of the OpenAPI document (service/openapi.py).
STORABLE_JSON = "StorableJson"
_STORABLE_JSON_REF = {"$ref": f"#/components/schemas/{STORABLE_JSON}"}
STORABLE_JSON_SCHEMA = {"anyOf": [
    {"type": "string", "pattern": NO_NUL_PATTERN}, {"type": ["number", "boolean", "null"]},
    {"type": "array", "items": _STORABLE_JSON_REF},
    {"type": "object", "propertyNames": {"pattern": NO_NUL_PATTERN}, "additionalProperties": _STORABLE_JSON_REF}]}
_STORABLE_OBJECT = {"type": "object", "propertyNames": {"pattern": NO_NUL_PATTERN},
                    "additionalProperties": _STORABLE_JSON_REF}
# An instant time: a calendar time yyyyMMddHHmmss[SSS] of a day that exists (no February 30th; February 29th of
# leap years only), or one of Hudi's reserved times (eight zeros of date: the init and bootstrap instants, the
# metadata table's); no year 0.
_YEAR = r"([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_LEAP_YEAR = r"([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = r"((0[13578]|1[02])(0[1-9]|[12][0-9]|3[01])|(0[469]|11)(0[1-9]|[12][0-9]|30)|02(0[1-9]|1[0-9]|2[0-8]))"
_DATE = rf"({_YEAR}{_MONTH_DAY}|{_LEAP_YEAR}0229)"
INSTANT_PATTERN = rf"^(({_DATE}([01][0-9]|2[0-3])[0-5][0-9][0-5][0-9])|0{{8}}[0-9]{{6}})([0-9]{{3}})?$"
_INSTANT = re.compile(INSTANT_PATTERN)
# An absolute path, a file: URL of one, or a URL naming a bucket or host. U+0085 (NEL) is white space to Python
# (which strips it) but not to a JSON Schema pattern's \s: named apart.
BASE_PATH_PATTERN = r"^(/|file:/|[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s\u0085])"
_BASE_PATH = re.compile(BASE_PATH_PATTERN)
_DOUBTFUL_JSON = re.compile(rb"NaN|Infinity|\\u0000")  # as pydantic_core.to_json writes them


def _storable_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (no lone surrogates)") from None
    return value


def doubtful_json(serialized: bytes) -> bool:
    """Whether pydantic_core.to_json's output may hold what jsonb refuses (see _storable_json)."""
    return _DOUBTFUL_JSON.search(serialized) is not None


def _storable_json(value: Any) -> Any:
    # PostgreSQL's jsonb rejects NaN and infinities, \u0000 and lone surrogates anywhere in a document.
    # pydantic's serializer (Rust) clears most documents at once; what it leaves in doubt (a NaN
    # token, \u0000, or an error) gets the exact check below.
    if value is None:
        return value
    try:
        if not doubtful_json(to_json(value)):
            return value
    except PydanticSerializationError:
        pass
    try:
        dumped = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError("must not contain NaN or infinite numbers") from None
    _storable_text(dumped.replace("\\u0000", "\x00"))
    return value


def _base_path(value: str) -> str:
    if not _BASE_PATH.match(value):
        raise ValueError("must be an absolute path or a URL such as s3://bucket/path")
    return normalize_base_path(_storable_text(value))


def _instant(value: str) -> str:
    if not (value.isascii() and _INSTANT.fullmatch(value)):
        raise ValueError("must be an instant time: 17 digits (yyyyMMddHHmmssSSS) or 14 (yyyyMMddHHmmss) "
                         "of a real date and time")
    return value


def _action(value: str) -> str:
    if value not in ACTIONS:
        raise ValueError(f"unknown action {value!r}; expected one of {', '.join(ACTIONS)}")
    return value


def _iso_time(value: Any) -> Any:
    # pydantic also reads numbers as Unix times; the API takes what its schema says: ISO 8601 date-times.
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip().lstrip("+-").replace(".", "", 1)
                                            .isdigit()):
        raise ValueError("must be an ISO 8601 date-time, such as 2025-01-31T12:00:00Z")
    return value


DateTime = Annotated[datetime, BeforeValidator(_iso_time)]
Text = Annotated[str, Field(json_schema_extra={"pattern": NO_NUL_PATTERN}), AfterValidator(_storable_text)]
ShortText = Annotated[str, Field(max_length=256, json_schema_extra={"pattern": NO_NUL_PATTERN}),
                      AfterValidator(_storable_text)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_storable_json), WithJsonSchema(_STORABLE_OBJECT)]
JsonObjects = Annotated[list[dict[str, Any]], AfterValidator(_storable_json),
                        WithJsonSchema({"type": "array", "items": _STORABLE_OBJECT})]
# The length is checked first (by pydantic-core), before anything else is done with the path.
BasePath = Annotated[str, Field(max_length=MAX_BASE_PATH_CHARS,
                                examples=["/data/hudi/trips", "s3://bucket/warehouse/trips"],
                                json_schema_extra={"pattern": BASE_PATH_PATTERN,
                                                   "allOf": [{"pattern": NO_NUL_PATTERN}]}),
                     AfterValidator(_base_path)]
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
InstantTime = Annotated[str, Field(examples=["20250101120000123"], json_schema_extra={"pattern": INSTANT_PATTERN}),
                        AfterValidator(_instant)]
Action = Annotated[str, Field(examples=[TimelineAction.DELTA_COMMIT.value], json_schema_extra={"enum": list(ACTIONS)}),
                   AfterValidator(_action)]
def _json_integer(value: Any) -> Any:
    # JSON Schema counts 117.0 an integer (a number without a fraction); `true` and "117" are not.
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Numbers and flags in JSON bodies are taken as their schema says: no `true` for 1, no `0` for false.
BodyInt = Annotated[int, Strict(), BeforeValidator(_json_integer)]
BodyBool = Annotated[bool, Strict()]
BodyFloat = Annotated[float, Strict()]  # an integer too (a JSON number), not a string
BodyId = Annotated[int, Field(ge=1, le=MAX_ID), Strict(), BeforeValidator(_json_integer)]
Limit = Annotated[int, Field(ge=1, le=500)]
Offset = Annotated[int, Field(ge=0, le=MAX_ID)]


def never_null(schema: dict[str, Any]) -> None:
    """`json_schema_extra` of a field that may be left out but not sent as null: its schema without the null."""
    options = [option for option in schema.pop("anyOf", []) if option.get("type") != "null"]
    if len(options) == 1:
        schema.update(options[0])
    schema.pop("default", None)


def present(field: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """JSON Schema: `field` is given, not null (and matches `schema`); for the rules that tie fields together,
    written into a model's schema so that the document says what the model's validator checks."""
    return {"required": [field], "properties": {field: schema or {"not": {"type": "null"}}}}


def exactly_one(*fields: str) -> dict[str, Any]:
    """JSON Schema: exactly one of `fields` is given (not null)."""
    return {"oneOf": [present(field) for field in fields]}


class Record(BaseModel):
    """A response body read from a database row."""

    model_config = ConfigDict(from_attributes=True)
