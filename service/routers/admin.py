"""Resource queues, API tokens and instances (alerts: routers/manager.py)."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response, status

from tms.db import InstanceRepo, QueueRepo, TaskRepo, TokenRepo

from ..auth import Admin, AuthenticatedFirst, Viewer
from ..schemas.admin import InstanceOut, NewToken, QueueIn, QueueOut, TokenIn, TokenOut
from ..schemas.common import Id
from ..schemas.problems import ADMIN, VIEWER, problems

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1")
QueueName = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


@router.get("/queues", response_model=list[QueueOut], dependencies=[Viewer], tags=["queues"],
            summary="Resource queues, with their running tasks", responses=problems(*VIEWER))
def list_queues(request: Request) -> list[dict[str, Any]]:
    with request.app.state.database.transaction() as session:
        running = TaskRepo(session).running_by_queue()
        return [{**QueueOut.model_validate(q).model_dump(), "running": running.get(q.name, 0)}
                for q in QueueRepo(session).list()]


@router.put("/queues/{name}", response_model=QueueOut, dependencies=[Admin], tags=["queues"],
            summary="Create or replace a resource queue", responses=problems(*ADMIN, 400, 413, 422))
def put_queue(name: QueueName, body: QueueIn, request: Request) -> QueueOut:
    with request.app.state.database.transaction() as session:
        return QueueOut.model_validate(QueueRepo(session).put(name, **body.model_dump(mode="json")))


@router.delete("/queues/{name}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin], tags=["queues"],
               summary="Delete a resource queue", responses=problems(*ADMIN, 404, 422))
def delete_queue(name: QueueName, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        QueueRepo(session).delete(name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/tokens", status_code=status.HTTP_201_CREATED, response_model=NewToken, dependencies=[Admin],
             tags=["tokens"], summary="Create an API token (shown once)", responses=problems(*ADMIN, 400, 413, 422))
def create_token(body: TokenIn, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        row, token = TokenRepo(session).create(body.role.value, body.name)
        return {**TokenOut.model_validate(row).model_dump(), "token": token}


@router.get("/tokens", response_model=list[TokenOut], dependencies=[Admin], tags=["tokens"],
            summary="API tokens (without their secrets)", responses=problems(*ADMIN))
def list_tokens(request: Request) -> list[TokenOut]:
    with request.app.state.database.transaction() as session:
        return [TokenOut.model_validate(t) for t in TokenRepo(session).list()]


@router.delete("/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               tags=["tokens"], summary="Revoke an API token", responses=problems(*ADMIN, 404, 422))
def revoke_token(token_id: Annotated[Id, Path()], request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        TokenRepo(session).revoke(token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/instances", response_model=list[InstanceOut], dependencies=[Viewer], tags=["instances"],
            summary="TMS processes and their last heartbeats", responses=problems(*VIEWER))
def list_instances(request: Request) -> list[InstanceOut]:
    with request.app.state.database.transaction() as session:
        return [InstanceOut.model_validate(i) for i in InstanceRepo(session).list()]
