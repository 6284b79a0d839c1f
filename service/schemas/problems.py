"""The error bodies of the API, and the `responses=` each route declares, so the OpenAPI document lists
every status code a route can answer with and the body it comes with (service/errors.py makes them)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Problem(BaseModel):
    """Every refusal (RFC 9457 problem details, `application/problem+json`): one line saying what is wrong."""

    type: str = Field("about:blank", description="No type beyond the status's")
    title: str = Field(description="The status's phrase", examples=["Not Found"])
    status: int = Field(description="The HTTP status code", examples=[404])
    detail: str = Field(description="What is wrong, in one line", examples=["no table with id 7"])
    instance: str = Field(description="The request's path", examples=["/api/v1/tables/7"])


class ValidationIssue(BaseModel):
    loc: list[str | int] = Field(description="Where: body, query, path or header, then the field")
    msg: str
    type: str


class ValidationProblem(Problem):
    """A request TMS refuses: `detail` in one line; `errors` per field when the request's shape is wrong
    (absent when the shape is right but TMS cannot do it, such as a path that holds no Hudi table)."""

    detail: str = Field(examples=["body.instant: must be an instant time: 17 digits (yyyyMMddHHmmssSSS) or 14"])
    errors: list[ValidationIssue] | None = None


_DESCRIPTIONS = {
    400: "The body is not JSON (malformed, or sent as another content type)",
    401: "No credentials, or a token (or callback key) that is unknown, revoked or expired",
    403: "The token's role is too low for this",
    404: "No such resource",
    409: "The request contradicts the recorded state (the body says how)",
    413: "The body is larger than the route's bound (TMS_MAX_BODY_BYTES, or TMS_MAX_BULK_BODY_BYTES)",
    422: "A request TMS refuses: malformed, out of range, or not doable as asked",
    503: "The metadata database is unavailable; retry later",
}


def problems(*codes: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """`responses=` for these error statuses; `descriptions` (as `d404="..."`) say more than the default."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        description = descriptions.get(f"d{code}", _DESCRIPTIONS[code])
        if code == 422:
            out[code] = {"description": description, "model": ValidationProblem}
        elif code == 503:
            out[code] = {"description": description, "model": Problem,
                         "headers": {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}}}
        else:
            out[code] = {"description": description, "model": Problem}
    return out


# By who may call a route.
VIEWER = (401, 503)
OPERATOR = (401, 403, 503)
ADMIN = (401, 403, 503)
WRITER = (400, 401, 403, 404, 413, 422, 503)
