"""Liveness, readiness and Prometheus metrics (no authentication: probes and scrapers)."""
from __future__ import annotations

import logging
from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field

from tms.db import migrate

log = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


class Readiness(BaseModel):
    """Which dependency is down, never how (a driver's error names hosts and users: it goes to the log)."""
    status: Literal["ok", "unavailable"]
    database: Literal["ok", "unreachable"]
    migrations: str | None = Field(None, description="The schema's revision (head when ready; `at X, head is Y` "
                                                     "when behind); absent while the database is unreachable")


@router.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:  # on the event loop: answers while every worker thread is busy
    return {"status": "ok"}


@router.get("/readyz", summary="The database is reachable and its schema is at head", response_model=Readiness,
            response_model_exclude_none=True,
            responses={503: {"description": "Not ready; the body says which dependency", "model": Readiness}})
def readyz(request: Request) -> JSONResponse:
    database = request.app.state.database
    try:
        database.ping()
        revision, head = migrate.current_revision(database.engine), migrate.head_revision()
    except Exception as exc:  # any failure to reach the database means "not ready"
        log.warning("not ready: the metadata database is unreachable: %s", str(exc).splitlines()[0] if str(exc) else
                    type(exc).__name__)
        return JSONResponse(status_code=503, content={"status": "unavailable", "database": "unreachable"})
    if revision != head:
        return JSONResponse(status_code=503, content={"status": "unavailable", "database": "ok",
                                                      "migrations": f"at {revision}, head is {head}"})
    return JSONResponse({"status": "ok", "database": "ok", "migrations": head})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
