"""Tasks: listing, detail with attempts, and the operator actions rerun, suspend, resume, cancel."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from tms.db import OperatorAction, TaskRepo, TaskState

from ..auth import Operator, Viewer
from ..schemas.common import Action, Id, Limit, Offset
from ..schemas.tasks import TaskDetail, TaskOut, TaskPage

router = APIRouter(prefix="/api/v1/tasks", tags=["tasks"])
TaskId = Annotated[Id, Path(description="The task's id")]


@router.get("", response_model=TaskPage, dependencies=[Viewer], summary="List tasks, newest first")
def list_tasks(request: Request, table_id: Annotated[Id | None, Query()] = None,
               action: Annotated[Action | None, Query()] = None, state: TaskState | None = None,
               since: Annotated[datetime | None, Query(description="Created at or after")] = None,
               until: Annotated[datetime | None, Query(description="Created before")] = None,
               limit: Limit = 50, offset: Offset = 0) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        tasks, total = TaskRepo(session).find(table_id=table_id, action=action, state=state, since=since,
                                              until=until, limit=limit, offset=offset)
        return {"items": tasks, "total": total, "limit": limit, "offset": offset}


@router.get("/{task_id}", response_model=TaskDetail, dependencies=[Viewer], summary="A task and its attempts")
def get_task(task_id: TaskId, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        repo = TaskRepo(session)
        task = repo.get(task_id)
        return {**TaskOut.model_validate(task).model_dump(), "attempts": repo.attempts(task_id)}


def _action_route(action: OperatorAction, summary: str, description: str):
    @router.post(f"/{{task_id}}:{action.value}", response_model=TaskOut, dependencies=[Operator],
                 summary=summary, description=description + " 409 if the task's state does not allow it.",
                 operation_id=f"{action.value}_task")
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
