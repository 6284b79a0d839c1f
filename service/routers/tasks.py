"""Tasks: listing, detail with attempts, and the operator actions rerun, suspend, resume, cancel."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from tms.db import OperatorAction, TaskRepo, TaskState
from tms.table_service import TableService

from ..auth import AuthenticatedFirst, Operator, Viewer
from ..pagination import TasksCursor, decode_cursor, page
from ..schemas.common import DateTime, Id, Limit, Offset
from ..schemas.problems import OPERATOR, VIEWER, problems
from ..schemas.tasks import FenceOut, TaskDetail, TaskOut, TaskPage

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/tasks", tags=["tasks"])
TaskId = Annotated[Id, Path(description="The task's id")]


@router.get("", response_model=TaskPage, dependencies=[Viewer], summary="List tasks, newest first",
            responses=problems(*VIEWER, 422))
def list_tasks(request: Request, table_id: Annotated[Id | None, Query()] = None,
               service: Annotated[TableService | None, Query(description="The table service")] = None,
               action: Annotated[TableService | None, Query(deprecated=True, description="Same as `service`")] = None,
               state: TaskState | None = None,
               since: Annotated[DateTime | None, Query(description="Created at or after")] = None,
               until: Annotated[DateTime | None, Query(description="Created before")] = None,
               limit: Limit = 50, offset: Offset = 0, cursor: TasksCursor = None) -> dict[str, Any]:
    """Walk every page with `cursor` (each page's `next_cursor`), or with `offset`."""
    before_id = decode_cursor(cursor)
    with request.app.state.database.transaction() as session:
        tasks, total = TaskRepo(session).find(table_id=table_id, service=service or action, state=state, since=since,
                                              until=until, limit=limit + 1, offset=offset, before_id=before_id,
                                              count=cursor is None)
        return page("tasks", tasks, limit, total, offset, cursor)


# `{task_id:int}`: `/tasks/1:cancel` is the cancel action's path (GET there is 405), not a task id "1:cancel".
@router.get("/{task_id:int}", response_model=TaskDetail, dependencies=[Viewer], summary="A task and its attempts",
            responses=problems(*VIEWER, 404, 422))
def get_task(task_id: TaskId, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        repo = TaskRepo(session)
        task = repo.get(task_id)
        return {**TaskOut.model_validate(task).model_dump(), "attempts": repo.attempts(task_id)}


@router.get("/{task_id}/fence", response_model=FenceOut, summary="Does a job's attempt still hold the lease?",
            responses=problems(403, 409, 422, 503, d403="No attempt of this task has this token and key",
                               d409="The attempt's lease is lost: cancelled, finished, taken over or expired"),
            description="Called by a job's driver before each timeline change (its `--fence-url`). "
                        "Authenticated by the attempt's own fence key, which only its worker and job know. "
                        "200 while `token` is the fencing token of the task's live lease; 409 once the task was "
                        "cancelled, finished or taken over, or its lease expired; 403 for a wrong key.")
async def check_fence(task_id: TaskId, request: Request,
                      token: Annotated[int, Query(ge=0, le=2**63 - 1, description="The attempt's fencing token")],
                      key: Annotated[str, Query(min_length=1, max_length=200, description="The attempt's fence key")]
                      ) -> dict[str, Any]:
    # Its own connections and threads (service.fence_checks): never behind the API's other requests.
    await request.app.state.fence_checks.check(task_id, token, key)
    return {"task_id": task_id, "fencing_token": token, "holds": True}


def _action_route(action: OperatorAction, summary: str, description: str):
    @router.post(f"/{{task_id}}:{action.value}", response_model=TaskOut, dependencies=[Operator],
                 summary=summary, description=description + " 409 if the task's state does not allow it.",
                 operation_id=f"{action.value}_task",
                 responses=problems(*OPERATOR, 404, 409, 422, d409="The task's state does not allow it"))
    def act(task_id: TaskId, request: Request) -> TaskOut:
        with request.app.state.database.transaction() as session:
            return TaskOut.model_validate(TaskRepo(session).apply(task_id, action))
    return act


_action_route(OperatorAction.RERUN, "Run a failed or cancelled task again",
              "FAILED or CANCELLED -> RUNNABLE (BLOCKED while blockers remain).")
_action_route(OperatorAction.SUSPEND, "Hold a task", "BLOCKED, RUNNABLE or FAILED -> SUSPENDED.")
_action_route(OperatorAction.RESUME, "Release a suspended task",
              "SUSPENDED -> RUNNABLE (BLOCKED while blockers remain).")
_action_route(OperatorAction.CANCEL, "Abandon a task",
              "Any state but SUCCEEDED and CANCELLED -> CANCELLED; a running job is stopped by its worker.")
