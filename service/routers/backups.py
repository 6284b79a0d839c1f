"""A table's backups: its backup policy, its versions and a backup now (the restore of a version is
`POST .../restore`, in the savepoints' router with the restore to a savepoint)."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, status

from tms.backup.layout import backup_root
from tms.backup.requests import request_backup_task, store_of
from tms.db import BackupTaskRepo, NotFoundError, TablePolicy, TableRepo
from tms.table_service import TableService

from ..actions.backups import set_backup_policy
from ..auth import Admin, AuthenticatedFirst, Operator, Viewer
from ..schemas.backups import BackupList, BackupPolicyIn, BackupPolicyOut
from ..schemas.common import Id
from ..schemas.problems import ADMIN, OPERATOR, VIEWER, problems
from ..schemas.tasks import TaskOut

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/tables", tags=["backups"])
TableId = Annotated[Id, Path(description="The table's id")]


def _policy_out(table_id: int, name: str, policy: TablePolicy) -> dict[str, Any]:
    return {"table_id": table_id, "destination": policy.backup_destination, "schedule": policy.backup_schedule,
            "keep_versions": policy.backup_keep_versions,
            "root": backup_root(policy.backup_destination, name, table_id)}


@router.put("/{table_id}/backup", response_model=BackupPolicyOut, dependencies=[Admin],
            summary="Set the table's backup policy", responses=problems(*ADMIN, 400, 404, 413, 422))
def put_backup_policy(table_id: TableId, body: BackupPolicyIn, request: Request) -> dict[str, Any]:
    """The destination must lie under TMS_STORAGE_ROOTS or TMS_BACKUP_ROOTS (when either is set). Stored as the
    table's `tms.backup.*` policy options. The manager's leader takes the first backup at
    once, then one at each time of the schedule, each followed by a backup-clean."""
    with request.app.state.database.transaction() as session:
        table = set_backup_policy(session, request.app.state.settings, table_id, body)
        return _policy_out(table_id, table.name, table.policy)


@router.get("/{table_id}/backup", response_model=BackupPolicyOut, dependencies=[Viewer],
            summary="The table's backup policy", responses=problems(*VIEWER, 404, 422, d404="No such table, or "
                                                                     "the table has no backup policy"))
def get_backup_policy(table_id: TableId, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        table = TableRepo(session).get(table_id)
    policy = table.policy
    if not policy.backup_destination:
        raise NotFoundError(f"table {table.name} has no backup policy")
    return _policy_out(table_id, table.name, policy)


@router.post("/{table_id}/backups", status_code=status.HTTP_202_ACCEPTED, response_model=TaskOut,
             dependencies=[Operator], summary="Take a backup now",
             responses=problems(*OPERATOR, 404, 409, 422, d409="A backup task of the table is in progress",
                                d422="The table has no backup policy"))
def take_backup_now(table_id: TableId, request: Request) -> Any:
    """Records a runnable backup task (a worker runs it); its answer is the task."""
    with request.app.state.database.transaction() as session:
        return TaskOut.model_validate(request_backup_task(session, table_id, TableService.BACKUP))


@router.get("/{table_id}/backups", response_model=BackupList, dependencies=[Viewer],
            summary="The backup versions kept", responses=problems(*VIEWER, 404, 422))
def list_backups(table_id: TableId, request: Request) -> dict[str, Any]:
    """Read from the destination's manifests (the truth about what is kept), with the table's backup tasks."""
    with request.app.state.database.transaction() as session:
        table = TableRepo(session).get(table_id)
        tasks = [TaskOut.model_validate(t) for t in BackupTaskRepo(session).recent(table_id)]
    store = store_of(table, request.app.state.table_context)
    items = [{"version": m.version, "instant": m.instant, "state": "complete", "bytes_copied": m.bytes_copied,
              "files_copied": m.files_copied, "files": len(m.files), "total_bytes": m.total_bytes,
              "created_at": m.created_at} for m in store.manifests()]
    return {"table_id": table_id, "root": store.root, "items": items, "tasks": tasks}
