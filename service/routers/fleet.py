"""The fleet: every table's last health score, worst first (the manager's leader keeps them, tms.fleet.health),
the fleet's and a table's scores over time (backlog trends), scoring on request, and a table's orphan files:
listed to anyone, removed only on an admin's approval of each file (never automatically)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from tms.db import HealthRepo, TableRepo
from tms.fleet.health import score_stalest, score_tables
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.orphans import Orphan, find_orphans, remove_orphans

from ..auth import Admin, AuthenticatedFirst, Operator, Viewer
from ..schemas.common import Id
from ..schemas.fleet import (
    FleetBacklog,
    FleetHealth,
    OrphanRemoval,
    OrphanReport,
    OrphansRemoved,
    ScoreRequest,
    TableHealthHistory,
)
from ..schemas.problems import ADMIN, OPERATOR, VIEWER, problems

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1", tags=["fleet"])
UNSCORED = "unscored"  # a table registered since the leader's last round
TableId = Annotated[Id, Path(description="The table's id")]


def fleet_health(request: Request, limit: int) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        repo = HealthRepo(session)
        unscored = repo.unscored()
        return {"by_status": {**repo.by_status(), **({UNSCORED: unscored} if unscored else {})}, "items": [
            {"table_id": t.id, "database": t.database, "name": t.name, "base_path": t.base_path,
             "enabled": t.enabled, "score": h.score if h else None, "status": h.status if h else UNSCORED,
             "reasons": h.reasons if h else [], "checked_at": h.checked_at if h else None}
            for t, h in repo.worst(limit)]}


@router.get("/fleet/health", response_model=FleetHealth, dependencies=[Viewer], responses=problems(*VIEWER, 422),
            summary="The tables' last health scores, worst first")
def get_fleet_health(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """As last scored by the manager's leader (every TMS_MANAGER_HEALTH_SECONDS, the TMS_HEALTH_BATCH tables
    scored longest ago, never scored first) or on request (POST /api/v1/fleet/health:score); a table registered
    since is listed first, `unscored` (score null) until then."""
    return fleet_health(request, limit)


Hours = Annotated[int, Query(ge=1, le=24 * 90, description="How many hours back")]


@router.get("/fleet/backlog", response_model=FleetBacklog, dependencies=[Viewer], responses=problems(*VIEWER, 422),
            summary="The fleet's backlog and health per hour")
def get_fleet_backlog(request: Request, hours: Hours = 24) -> dict[str, Any]:
    """Per hour, every table as its last score in that hour showed it: tables per status, pending log bytes and
    files summed. Scores are kept TMS_HEALTH_HISTORY_DAYS."""
    since = datetime.now(UTC) - timedelta(hours=hours)
    with request.app.state.database.transaction() as session:
        return {"hours": hours, "items": [vars(h) for h in HealthRepo(session).fleet_by_hour(since)]}


@router.get("/tables/{table_id}/health/history", response_model=TableHealthHistory, dependencies=[Viewer],
            responses=problems(*VIEWER, 404, 422), summary="A table's health scores over time")
def get_table_health_history(table_id: TableId, request: Request, hours: Hours = 24) -> dict[str, Any]:
    since = datetime.now(UTC) - timedelta(hours=hours)
    with request.app.state.database.transaction() as session:
        TableRepo(session).get(table_id)
        return {"table_id": table_id, "hours": hours, "samples": HealthRepo(session).samples(table_id, since)}


@router.post("/fleet/health:score", response_model=FleetHealth, dependencies=[Operator],
             responses=problems(*OPERATOR, 400, 404, 413, 422), summary="Score tables' health now")
def score_now(body: ScoreRequest, request: Request) -> dict[str, Any]:
    """Reads each table from storage; the answer is the fleet view after it."""
    settings = request.app.state.settings
    options = {"clean_commits": settings.planner.clean_commits,
               "orphan_safety_seconds": settings.orphan_safety_hours * 3600,
               "context": request.app.state.table_context}
    if body.table_ids is None:
        score_stalest(request.app.state.database, datetime.now(UTC), batch=settings.manager.health_batch, **options)
    else:
        with request.app.state.database.transaction() as session:
            for table_id in body.table_ids:
                TableRepo(session).get(table_id)  # 404 for an unknown one, before any is scored
        score_tables(request.app.state.database, list(body.table_ids), datetime.now(UTC), **options)
    return fleet_health(request, 100)


def _orphan_out(o: Orphan) -> dict[str, Any]:
    return {"path": o.path, "size": o.size, "instant": o.instant,
            "modified_at": datetime.fromtimestamp(o.mtime, UTC)}


def _table(request: Request, table_id: int) -> HudiTable:
    with request.app.state.database.transaction() as session:
        base_path = TableRepo(session).get(table_id).base_path
    return HudiTable.load(base_path, context=request.app.state.table_context)


@router.get("/tables/{table_id}/orphans", response_model=OrphanReport, dependencies=[Viewer],
            responses=problems(*VIEWER, 404, 422), summary="The table's orphan files")
def list_orphans(table_id: TableId, request: Request) -> dict[str, Any]:
    """Files in the table's partitions that no instant references (neither completed nor pending), older than
    TMS_ORPHAN_SAFETY_HOURS: leftovers of failed writes. A file written by an instant older than the active
    timeline's first is never counted (it may have been archived)."""
    safety_hours = request.app.state.settings.orphan_safety_hours
    orphans = find_orphans(_table(request, table_id), now=datetime.now(UTC).timestamp(),
                           safety_seconds=safety_hours * 3600)
    return {"table_id": table_id, "safety_hours": safety_hours, "orphans": [_orphan_out(o) for o in orphans],
            "total_bytes": sum(o.size for o in orphans)}


@router.post("/tables/{table_id}/orphans:remove", response_model=OrphansRemoved, dependencies=[Admin],
             responses=problems(*ADMIN, 400, 404, 413, 422), summary="Remove orphan files an admin approved")
def remove(table_id: TableId, body: OrphanRemoval, request: Request) -> dict[str, Any]:
    """Deletes each listed file that is an orphan now (found again under the same rule); any other path is
    left alone and named in `kept`. TMS never removes orphans by itself."""
    table = _table(request, table_id)
    now = datetime.now(UTC).timestamp()
    safety = request.app.state.settings.orphan_safety_hours * 3600
    current = {o.path: o for o in find_orphans(table, now=now, safety_seconds=safety)}
    approved = [current[p] for p in dict.fromkeys(body.paths) if p in current]
    removed = remove_orphans(table, approved, now=now, safety_seconds=safety)
    gone = {o.path for o in removed}
    return {"table_id": table_id, "removed": [_orphan_out(o) for o in removed],
            "kept": [p for p in dict.fromkeys(body.paths) if p not in gone]}
