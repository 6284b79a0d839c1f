"""Error responses: every failure a client can cause is a 4xx with one clear message; a database
outage is a 503. Nothing a client sends should ever produce a 500."""
from __future__ import annotations

import logging

import psycopg
from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError

from tms.db import ConflictError, NotFoundError
from tms.db.embedded import EmbeddedDatabaseError
from tms.errors import TMSError
from tms.execute.errors import FencingError

log = logging.getLogger(__name__)


def _field(loc) -> str:
    return ".".join(str(part) for part in loc)


def validation_detail(errors) -> str:
    """`body.instant: must be an instant time ...; query.limit: ...`"""
    return "; ".join(f"{_field(e['loc'])}: {e['msg'].removeprefix('Value error, ')}" for e in errors)


def validation_error(errors, *prefix: str) -> RequestValidationError:
    """A pydantic error raised outside request parsing, reported as if the request body had it."""
    return RequestValidationError([{**e, "loc": (*prefix, *e["loc"])} for e in errors])


async def _on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
    return JSONResponse(status_code=422, content=jsonable_encoder(
        {"detail": validation_detail(errors), "errors": errors}))


# The status of each kind of TMSError, most specific first; any other TMSError is a request TMS refuses (422).
STATUS_OF: tuple[tuple[type[TMSError], int], ...] = (
    (NotFoundError, status.HTTP_404_NOT_FOUND),
    (ConflictError, status.HTTP_409_CONFLICT),
    (FencingError, status.HTTP_409_CONFLICT),
    (EmbeddedDatabaseError, status.HTTP_503_SERVICE_UNAVAILABLE),
    (TMSError, status.HTTP_422_UNPROCESSABLE_CONTENT),
)


def status_of(exc: TMSError) -> int:
    return next(code for kind, code in STATUS_OF if isinstance(exc, kind))


async def _on_tms_error(request: Request, exc: TMSError) -> JSONResponse:
    return JSONResponse(status_code=status_of(exc), content={"detail": str(exc)})


async def _on_data_error(request: Request, exc: DataError) -> JSONResponse:
    # A value that passed validation but PostgreSQL still refused (the validators should catch these).
    log.warning("database refused a value: %s", exc.orig)
    return JSONResponse(status_code=422, content={"detail": f"invalid value: {exc.orig}"})


async def _on_database_down(request: Request, exc: Exception) -> JSONResponse:
    log.error("database unavailable: %s", getattr(exc, "orig", exc))
    return JSONResponse(status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
                        content={"detail": "the metadata database is unavailable; retry later"},
                        headers={"Retry-After": "5"})


def install(app: FastAPI) -> None:
    # Starlette types a handler as taking any Exception; each of these gets only the class it is registered for.
    app.add_exception_handler(RequestValidationError, _on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(TMSError, _on_tms_error)  # type: ignore[arg-type]
    app.add_exception_handler(DataError, _on_data_error)  # type: ignore[arg-type]
    for unavailable in (OperationalError, psycopg.OperationalError):
        app.add_exception_handler(unavailable, _on_database_down)
