"""Liveness, readiness and Prometheus metrics (no authentication: probes and scrapers)."""
from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tms.db import migrate

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:  # on the event loop: answers while every worker thread is busy
    return {"status": "ok"}


@router.get("/readyz", summary="The database is reachable and its schema is at head",
            responses={503: {"description": "Not ready; the body says why"}})
def readyz(request: Request) -> JSONResponse:
    database = request.app.state.database
    try:
        database.ping()
        revision, head = migrate.current_revision(database.engine), migrate.head_revision()
    except Exception as exc:  # any failure to reach the database means "not ready"
        return JSONResponse(status_code=503, content={"status": "unavailable", "database": str(exc).splitlines()[0]})
    if revision != head:
        return JSONResponse(status_code=503, content={"status": "unavailable", "database": "ok",
                                                      "migrations": f"at {revision}, head is {head}"})
    return JSONResponse({"status": "ok", "database": "ok", "migrations": head})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
