"""A table's savepoints (list, create now, delete) and its restore to one (in place, as a task)."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response, status

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import read_savepoint

from ..actions import savepoints as actions
from ..actions.restores import restore
from ..auth import Admin, AuthenticatedFirst, Operator, Viewer
from ..schemas.common import Id, InstantTime
from ..schemas.problems import ADMIN, OPERATOR, VIEWER, problems
from ..schemas.restore import RestoreRequest
from ..schemas.savepoints import BackfillOut, BackfillRequest, SavepointOut, SavepointRequest
from ..schemas.tasks import TaskOut

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/tables", tags=["savepoints"])
TableId = Annotated[Id, Path(description="The table's id")]


def _out(table: HudiTable, instant: str) -> dict[str, Any]:
    meta = read_savepoint(table, instant)
    files = sum(len(p.savepoint_data_file) for p in meta.partition_metadata.values())
    return {"instant": instant, "savepointed_by": meta.savepointed_by, "savepointed_at": meta.savepointed_at,
            "comments": meta.comments, "files": files}


def _table(request: Request, table_id: int) -> actions.SavepointedTable:
    with request.app.state.database.transaction() as session:
        return actions.savepointed_table(session, table_id, request.app.state.table_context)


@router.get("/{table_id}/savepoints", response_model=list[SavepointOut], dependencies=[Viewer],
            summary="The table's savepoints", responses=problems(*VIEWER, 404, 422))
def list_savepoints(table_id: TableId, request: Request) -> list[dict[str, Any]]:
    table = _table(request, table_id).table
    return [_out(table, s.timestamp) for s in table.timeline.savepoints()]


@router.post("/{table_id}/savepoints", response_model=SavepointOut, status_code=status.HTTP_201_CREATED,
             dependencies=[Operator], summary="Savepoint the table now",
             description="Writes a Hudi savepoint of the latest completed write (or of `instant`), as Hudi's "
                         "savepoint action does, under the writers' lock. 422 for an instant that is not a "
                         "completed write, already has a savepoint, or is older than what clean retained.",
             responses=problems(*OPERATOR, 400, 404, 413, 422))
def post_savepoint(table_id: TableId, body: SavepointRequest, request: Request) -> dict[str, Any]:
    target = _table(request, table_id)
    return _out(target.table, actions.savepoint_now(target, body.instant, body.comment))


@router.delete("/{table_id}/savepoints/{instant}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Operator],
               summary="Delete a savepoint", responses=problems(*OPERATOR, 404, 422))
def remove_savepoint(table_id: TableId, instant: InstantTime, request: Request) -> Response:
    actions.remove_savepoint(_table(request, table_id), instant)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{table_id}/backfills", response_model=BackfillOut, status_code=status.HTTP_201_CREATED,
             dependencies=[Operator], summary="Announce a backfill: savepoint the latest completed write first",
             description="Writes a Hudi savepoint of the latest completed write (made by `tms-backfill`, the reason "
                         "as its comment) under the writers' lock, before the backfill writes anything, so that the "
                         "table can be restored to it (`POST .../restore`). It is kept until the backfill is ended "
                         "(`DELETE .../backfills/{instant}`): `tms.savepoint.keep` never deletes it. A write that has "
                         "a savepoint already is answered with it (`created`: false). 422: no completed write.",
             responses=problems(*OPERATOR, 400, 404, 413, 422))
def post_backfill(table_id: TableId, request: Request, body: BackfillRequest | None = None) -> dict[str, Any]:
    reason = body.reason if body is not None else ""
    target = _table(request, table_id)
    instant, created = actions.announce_backfill(target, reason)
    return {"table_id": table_id, "savepoint": _out(target.table, instant), "created": created}


@router.delete("/{table_id}/backfills/{instant}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Operator],
               summary="End a backfill: delete the savepoint its announcement made",
               responses=problems(*OPERATOR, 404, 422, d422="No backfill's savepoint at that instant"))
def end_backfill(table_id: TableId, instant: InstantTime, request: Request) -> Response:
    actions.end_backfill(_table(request, table_id), instant)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{table_id}/restore", response_model=TaskOut, status_code=status.HTTP_202_ACCEPTED,
             dependencies=[Admin], summary="Restore the table to a savepoint, or a backup version to a new path",
             description="`{\"savepoint\": instant, \"in_place\": true}`: writes Hudi's restore plan (every instant "
                         "after the savepoint, newest first) under the writers' lock and answers with its task; a "
                         "worker rolls them back. `{\"version\": N, \"target_path\": path}` (with `\"catch_up\": "
                         "true`: then the table's instants completed since the version) or `{\"savepoint\": "
                         "instant, \"target_path\": path}`: copies the version or the table as of the savepoint to "
                         "a new base path (under the storage roots, empty or absent) as a backup_restore task. 422, "
                         "before anything is written, when it cannot be done exactly: no such savepoint or version, "
                         "a newer savepoint, a writer's instant pending (unless `force`), a metadata table compacted "
                         "since, a target that is not empty.",
             responses=problems(*ADMIN, 400, 404, 409, 413, 422, d409="A backup task of the table is in progress"))
def post_restore(table_id: TableId, body: RestoreRequest, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        task = restore(session, request.app.state.settings, table_id, body, context=request.app.state.table_context)
        return TaskOut.model_validate(task).model_dump()
