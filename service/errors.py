"""Error responses: every failure a client can cause is a 4xx with one clear message; a database
outage is a 503. Nothing a client sends should ever produce a 500. Every error body has one shape, RFC 9457's
problem details (`application/problem+json`: type, title, status, detail, instance; `errors` per field for a
malformed request), made by `problem()` alone."""
from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

import psycopg
from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tms.db import ConflictError, NotFoundError
from tms.db.embedded import EmbeddedDatabaseError
from tms.errors import ONE_LINE_ERRORS, TMSError
from tms.execute.errors import FencingError
from tms.hudi.errors import HudiError

log = logging.getLogger(__name__)


PROBLEM_JSON = "application/problem+json"
NOT_JSON = "the request body is not valid JSON"
# pydantic's errors for a body that is JSON but not an object; their messages differ by route and one names
# the model (an internal name): each is told as this one message.
_NOT_AN_OBJECT_TYPES = frozenset({"model_type", "model_attributes_type", "dict_type"})
NOT_AN_OBJECT = "must be a JSON object"


# What an error body may echo of a request: control characters (ANSI escapes, newlines) and the invisible
# ones that reorder text shown as Python escapes (\x1b), each run of text without spaces (a path, a value)
# cut to ECHOED_WORD characters and the whole to ECHOED_TEXT, each cut marked with "…".
ECHOED_WORD = 200
ECHOED_TEXT = 2000
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_LONG_WORD = re.compile(rf"\S{{{ECHOED_WORD + 1},}}")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str) -> str:
    """`text` as an error body may show it: escaped and bounded (see ECHOED_WORD)."""
    if len(text) > 4 * ECHOED_TEXT:  # no need to escape what will be cut off
        text = text[:4 * ECHOED_TEXT]
    text = _UNSHOWABLE.sub(_escape, text)
    text = _LONG_WORD.sub(lambda m: m.group()[:ECHOED_WORD] + "…", text)
    return text if len(text) <= ECHOED_TEXT else text[:ECHOED_TEXT] + "…"


def _shown_issue(error: dict[str, Any]) -> dict[str, Any]:
    return {**error, "loc": [shown(part) if isinstance(part, str) else part for part in error.get("loc", ())],
            "msg": shown(str(error.get("msg", "")))}


def problem(request: Request, status_code: int, detail: str, *, headers: dict[str, str] | None = None,
            **extensions: Any) -> JSONResponse:
    """The one error body of the API (RFC 9457): no type beyond the status's, so `about:blank` and the
    status's phrase as the title; the request's path as the instance. What it echoes is `shown()`."""
    if "errors" in extensions:
        extensions["errors"] = [_shown_issue(e) for e in extensions["errors"]]
    body = {"type": "about:blank", "title": HTTPStatus(status_code).phrase, "status": status_code,
            "detail": shown(detail), "instance": shown(request.url.path), **extensions}
    return JSONResponse(status_code=status_code, content=jsonable_encoder(body), headers=headers,
                        media_type=PROBLEM_JSON)


class BodyNotJson(Exception):
    """A request body that cannot be read as JSON (malformed, or sent as another content type): 400."""

    def __init__(self, content_type: str | None):
        super().__init__(not_json_detail(content_type))


def is_json(content_type: str | None) -> bool:
    if not content_type:  # as FastAPI: a body without a content type is read as JSON
        return True
    subtype = content_type.partition(";")[0].strip().lower().partition("/")[2]
    return subtype == "json" or subtype.endswith("+json")


def not_json_detail(content_type: str | None) -> str:
    if is_json(content_type):
        return NOT_JSON
    media_type = (content_type or "").partition(";")[0].strip()
    return f"the request body must be JSON (Content-Type: application/json), not {media_type}"


def _field(loc) -> str:
    return ".".join(str(part) for part in loc)


def _plain(error: dict[str, Any]) -> dict[str, Any]:
    """An error as the API tells it: loc, msg and type only, no model name in the message."""
    kept = {k: v for k, v in error.items() if k in ("loc", "msg", "type")}
    if kept.get("type") in _NOT_AN_OBJECT_TYPES:
        kept["msg"] = NOT_AN_OBJECT
    return kept


def validation_detail(errors) -> str:
    """`body.instant: must be an instant time ...; query.limit: ...`"""
    return "; ".join(f"{_field(e['loc'])}: {e['msg'].removeprefix('Value error, ')}" for e in errors)


def validation_error(errors, *prefix: str) -> RequestValidationError:
    """A pydantic error raised outside request parsing, reported as if the request body had it."""
    return RequestValidationError([{**e, "loc": (*prefix, *e["loc"])} for e in errors])


def _body_not_json(request: Request, errors: list[dict[str, Any]]) -> bool:
    """Whether the errors come of a body that is not JSON: malformed, or of another content type."""
    body_errors = [e for e in errors if e.get("loc") and e["loc"][0] == "body"]
    return any(e.get("type") == "json_invalid" for e in body_errors) or (
        bool(body_errors) and not is_json(request.headers.get("content-type")))


async def _on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    if any(e.get("loc") and e["loc"][0] == "path" for e in exc.errors()):
        # A path that routing took for another route's parameter (PATCH /tables/1:plan matched
        # /tables/{table_id}): when the path's own route (the most specific) lacks the method, that is a 405.
        documented = allowed_methods(request.app, request.url.path)
        if documented and request.method not in documented:
            return problem(request, status.HTTP_405_METHOD_NOT_ALLOWED, "Method Not Allowed",
                           headers={"Allow": ", ".join(documented)})
    if _body_not_json(request, list(exc.errors())):
        return problem(request, status.HTTP_400_BAD_REQUEST, not_json_detail(request.headers.get("content-type")))
    errors = [_plain(e) for e in exc.errors()]
    return problem(request, status.HTTP_422_UNPROCESSABLE_CONTENT, validation_detail(errors), errors=errors)


async def _on_body_not_json(request: Request, exc: BodyNotJson) -> JSONResponse:
    return problem(request, status.HTTP_400_BAD_REQUEST, str(exc))


# The status of each kind of TMSError (and of the format library's HudiError), most specific first; any other is
# a request TMS refuses (422).
STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, status.HTTP_404_NOT_FOUND),
    (ConflictError, status.HTTP_409_CONFLICT),
    (FencingError, status.HTTP_409_CONFLICT),
    (EmbeddedDatabaseError, status.HTTP_503_SERVICE_UNAVAILABLE),
    (TMSError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (HudiError, status.HTTP_422_UNPROCESSABLE_CONTENT),
)


def status_of(exc: Exception) -> int:
    return next(code for kind, code in STATUS_OF if isinstance(exc, kind))


async def _on_tms_error(request: Request, exc: Exception) -> JSONResponse:
    return problem(request, status_of(exc), str(exc))


async def _on_data_error(request: Request, exc: DataError) -> JSONResponse:
    # A value that passed validation but PostgreSQL still refused (the validators should catch these).
    log.warning("database refused a value: %s", exc.orig)
    return problem(request, status.HTTP_422_UNPROCESSABLE_CONTENT, f"invalid value: {exc.orig}")


async def _on_database_down(request: Request, exc: Exception) -> JSONResponse:
    log.error("database unavailable: %s", getattr(exc, "orig", exc))
    return problem(request, status.HTTP_503_SERVICE_UNAVAILABLE, "the metadata database is unavailable; retry later",
                   headers={"Retry-After": "5"})


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the OpenAPI document gives the most specific path template matching `path` (most literal
    characters: a task's `/tasks/1:cancel` is the `:cancel` path's, not `/tasks/{task_id}`'s)."""
    matching = {template: operations for template, operations in app.openapi().get("paths", {}).items()
                if re.fullmatch(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(template)), path)}
    if not matching:
        return []
    literal = lambda template: len(re.sub(r"\{[^}]*\}", "", template))  # noqa: E731
    return sorted(method.upper() for method in matching[max(matching, key=literal)])


async def _on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = dict(exc.headers or {})
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        documented = allowed_methods(request.app, request.url.path)
        if documented:  # else a path outside the API (the dashboard's): Starlette's Allow stands
            headers["Allow"] = ", ".join(documented)
    return problem(request, exc.status_code, str(exc.detail), headers=headers)


def install(app: FastAPI) -> None:
    # Starlette types a handler as taking any Exception; each of these gets only the class it is registered for.
    app.add_exception_handler(StarletteHTTPException, _on_http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(BodyNotJson, _on_body_not_json)  # type: ignore[arg-type]
    for one_line in ONE_LINE_ERRORS:
        app.add_exception_handler(one_line, _on_tms_error)
    app.add_exception_handler(DataError, _on_data_error)  # type: ignore[arg-type]
    for unavailable in (OperationalError, psycopg.OperationalError):
        app.add_exception_handler(unavailable, _on_database_down)
