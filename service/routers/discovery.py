"""Discovery: scan storage roots for Hudi tables and onboard them (tms.fleet)."""
from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from tms.db import DiscoveryRepo
from tms.fleet.glue import sync_glue_database
from tms.fleet.hive import sync_hive_database
from tms.fleet.onboarding import scan_root
from tms.hudi.storage.paths import is_under_roots, normalize_base_path

from ..actions.tables import checked_policy
from ..auth import Admin, AuthenticatedFirst, Viewer
from ..errors import validation_error
from ..schemas.common import Limit, Offset
from ..schemas.discovery import (
    DiscoveredOut,
    DiscoveredPage,
    GlueSyncRequest,
    HiveSyncRequest,
    ScanOut,
    ScanRequest,
    ScanResult,
)
from ..schemas.problems import ADMIN, VIEWER, problems

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/discovery", tags=["discovery"])


@router.post("/scan", response_model=ScanResult, dependencies=[Admin],
             responses=problems(*ADMIN, 400, 413, 422, d422="A root outside the storage roots, or bad policies"),
             summary="Find the Hudi tables under a storage root and onboard them")
def scan(body: ScanRequest, request: Request) -> dict[str, Any]:
    """Registers each table found that TMS can serve (with `policies`), records the ones it refuses with the
    reason, and disables registered tables gone from storage (never deletes them). Idempotent: tables found
    again are left as they are. Without `root`, scans every storage root."""
    roots = request.app.state.settings.storage_roots
    if body.root is not None and not is_under_roots(body.root, roots):
        raise validation_error([{"loc": ("root",), "type": "value_error",
                                 "msg": f"{body.root} is outside the storage roots ({', '.join(roots)})"}], "body")
    if body.root is None and not roots:
        raise validation_error([{"loc": ("root",), "type": "value_error",
                                 "msg": "no root given and TMS_STORAGE_ROOTS is empty: name the root to scan"}],
                               "body")
    policies = checked_policy(request.app.state.settings, {}, body.policies).explicit()
    scans = []
    for root in [body.root] if body.root is not None else [normalize_base_path(r) for r in roots]:
        report = scan_root(request.app.state.database, root, policies=policies, max_depth=body.max_depth,
                           refresh=request.app.state.intake.forget_tables,
                           context=request.app.state.table_context)
        scans.append(asdict(report))
    return {"scans": scans}


@router.post("/glue-sync", response_model=ScanOut, dependencies=[Admin],
             responses=problems(*ADMIN, 400, 404, 413, 422, d404="No such Glue database",
                                d422="Bad policies, or the Glue sync is not installed"),
             summary="Onboard the Hudi tables of an AWS Glue database")
def glue_sync(body: GlueSyncRequest, request: Request) -> dict[str, Any]:
    """Each Hudi table the Glue database lists (by Spark's provider or Hudi's input format) is onboarded at its
    location as a scan onboards a table it finds (under TMS_STORAGE_ROOTS, with the policy templates); every
    other table is listed refused with the reason; a table registered by an earlier sync and dropped from the
    catalog since is disabled (never deleted). Recorded with the root `glue://<database>`."""
    settings = request.app.state.settings
    policies = checked_policy(request.app.state.settings, {}, body.policies).explicit()
    report = sync_glue_database(request.app.state.database, body.database,
                                endpoint_url=settings.manager.glue_endpoint_url, region=settings.manager.glue_region,
                                storage_roots=settings.storage_roots, policies=policies,
                                refresh=request.app.state.intake.forget_tables,
                                context=request.app.state.table_context)
    return asdict(report)


@router.post("/hive-sync", response_model=ScanOut, dependencies=[Admin],
             responses=problems(*ADMIN, 400, 404, 413, 422, d404="No such Hive Metastore database",
                                d422="Bad policies, or no Hive Metastore configured or reachable"),
             summary="Onboard the Hudi tables of a Hive Metastore database")
def hive_sync(body: HiveSyncRequest, request: Request) -> dict[str, Any]:
    """Each Hudi table the database of the metastore at TMS_HIVE_METASTORE_URI lists (by Spark's provider or
    Hudi's input format) is onboarded at its location as a scan onboards a table it finds (under
    TMS_STORAGE_ROOTS, with the policy templates); every other table is listed refused with the reason; a table
    registered by an earlier sync and dropped from the metastore since is disabled (never deleted). Recorded
    with the root `hive://<database>`."""
    settings = request.app.state.settings
    policies = checked_policy(request.app.state.settings, {}, body.policies).explicit()
    report = sync_hive_database(request.app.state.database, body.database,
                                metastore_uri=settings.manager.hive_metastore_uri,
                                storage_roots=settings.storage_roots, policies=policies,
                                refresh=request.app.state.intake.forget_tables,
                                context=request.app.state.table_context)
    return asdict(report)


@router.get("/tables", response_model=DiscoveredPage, dependencies=[Viewer], responses=problems(*VIEWER, 422),
            summary="What discovery found: registered, refused (with the reason) and missing tables")
def discovered(request: Request,
               state: Annotated[Literal["registered", "refused", "missing"] | None, Query()] = None,
               limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        rows, total = DiscoveryRepo(session).list(state=state, limit=limit, offset=offset)
        return {"items": [DiscoveredOut.model_validate(r) for r in rows], "total": total, "limit": limit,
                "offset": offset}
