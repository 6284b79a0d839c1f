"""The table registry: register, list, inspect, change policies, enable/disable, unregister."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response, status

from tms.db import EventRepo, RolloutRepo, TableRecord, TableRepo, TaskRepo, TemplateRepo
from tms.plan_pass.damage import reported_damaged_files
from tms.planning.templates import PRIORITY, QUEUE, Template, resolve

from ..actions import tables as actions
from ..auth import Admin, AuthenticatedFirst, Operator, Viewer
from ..pagination import TablesCursor, decode_cursor, page
from ..schemas.common import Id, Limit, Offset, ShortText
from ..schemas.problems import ADMIN, OPERATOR, VIEWER, problems
from ..schemas.tables import (
    PlanRequest,
    PlanResult,
    TableChanges,
    TableDetail,
    TableOut,
    TablePage,
    TableRegistered,
    TableRegistration,
)
from ..schemas.tasks import TaskOut
from ..table_view import live_view, planner_outlook, ttl_schedule
from ..writer_options import writer_options

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/tables", tags=["tables"])
TableId = Annotated[Id, Path(description="The table's id")]
_COLUMNS = [name for name in TableOut.model_fields if name not in ("has_callback_key", "policies", "sources")]


def _out(table: TableRecord, templates: list[Template]) -> dict[str, Any]:
    """The table as the API gives it; `templates`: the policy templates (for where each setting comes from)."""
    policies = {**table.policy.options(), **table.concurrency_options}
    effective = resolve(table.own_settings or {}, next((t for t in templates if t.name == table.template), None))
    return {**{name: getattr(table, name) for name in _COLUMNS},
            "has_callback_key": table.callback_key_hash is not None, "policies": policies,
            "sources": {key: effective.source(key) for key in [*policies, QUEUE, PRIORITY]}}


@router.post("", status_code=status.HTTP_201_CREATED, response_model=TableRegistered, dependencies=[Admin],
             summary="Register a table by its base path",
             responses=problems(*ADMIN, 400, 409, 413, 422, d409="The base path is registered already",
                                d422="Malformed, outside the storage roots, not a Hudi table TMS can read, or a "
                                     "table TMS can neither read nor run any table service on"))
def register_table(body: TableRegistration, request: Request) -> dict[str, Any]:
    """Reads the table's `hoodie.properties` (type, version, key fields). The path must lie under
    one of TMS_STORAGE_ROOTS. Registering changes nothing on storage. The answer's `capabilities` say what
    TMS can do for the table: reading and each table service, and why not the others."""
    settings = request.app.state.settings
    checked = actions.check_registration(settings, body, request.app.state.table_context)
    with request.app.state.database.transaction() as session:
        table, report = actions.register_table(session, settings, checked)
        return {**_out(table, TemplateRepo(session).templates()), "capabilities": report,
                "writer_options": writer_options(settings, request,
                                                 table_has_own_key=table.callback_key_hash is not None)}


@router.get("", response_model=TablePage, dependencies=[Viewer], summary="List tables",
            responses=problems(*VIEWER, 422))
def list_tables(request: Request, database: Annotated[ShortText | None, Query()] = None,
                name: Annotated[ShortText | None, Query(description="Substring of the table name")] = None,
                table_type: Annotated[str | None, Query(pattern="^(COPY_ON_WRITE|MERGE_ON_READ)$")] = None,
                enabled: bool | None = None, limit: Limit = 50, offset: Offset = 0,
                cursor: TablesCursor = None) -> dict[str, Any]:
    """By id; walk every page with `cursor` (each page's `next_cursor`), or with `offset`."""
    after_id = decode_cursor(cursor)
    with request.app.state.database.transaction() as session:
        tables, total = TableRepo(session).find(database=database, name=name, table_type=table_type,
                                                enabled=enabled, limit=limit + 1, offset=offset, after_id=after_id,
                                                count=cursor is None)
        body = page("tables", tables, limit, total, offset, cursor)
        templates = TemplateRepo(session).templates()
        return {**body, "items": [_out(t, templates) for t in body["items"]]}


@router.get("/{table_id}", response_model=TableDetail, dependencies=[Viewer],
            summary="A table: config, policies, timeline, file groups, pending instants, health",
            responses=problems(*VIEWER, 404, 422))
def get_table(table_id: TableId, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        table = TableRepo(session).get(table_id)
        tasks_by_state = TaskRepo(session).counts_by_state(table_id=table_id)
        health_counts = TaskRepo(session).health_counts(table_id)
        policy = table.policy
        ttl_tasks = ttl_schedule(session, table_id, policy)
        out = _out(table, TemplateRepo(session).templates())
        hudi_engine = RolloutRepo(session).hudi_engine_for(queue=table.queue, database=table.database,
                                                           table=table.name)
        last_event_at = EventRepo(session).last_received_at(table_id)
        damaged = reported_damaged_files(session, table_id)
    settings = request.app.state.settings
    view = live_view(table.base_path, policy, health_counts, table.enabled, ttl_tasks,
                     clean_commits=settings.planner.clean_commits,
                     orphan_safety_seconds=settings.orphan_safety_hours * 3600, hudi_engine=hudi_engine,
                     planner_state=table.planner_state, planner_services=frozenset(settings.planner.services),
                     context=request.app.state.table_context,
                     damaged_files=damaged)
    return {**out, **view, "properties": table.properties, "tasks_by_state": tasks_by_state,
            "services": planner_outlook(table.planner_state, settings),
            "writer_options": writer_options(settings, request, table_has_own_key=out["has_callback_key"]),
            "last_event_at": last_event_at}


@router.patch("/{table_id}", response_model=TableOut, dependencies=[Admin],
              summary="Change policies, priority, queue, callback key; enable or disable",
              responses=problems(*ADMIN, 400, 404, 413, 422))
def update_table(table_id: TableId, body: TableChanges, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        table = actions.change_table(session, request.app.state.settings, table_id, body,
                                     request.app.state.table_context)
        out = _out(table, TemplateRepo(session).templates())
    request.app.state.intake.forget_tables()
    return out


@router.delete("/{table_id}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               summary="Unregister a table (its files are never touched)",
               responses=problems(*ADMIN, 404, 409, 422, d409="One of the table's tasks is running"))
def delete_table(table_id: TableId, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        TableRepo(session).unregister(table_id)
    request.app.state.intake.forget_tables()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{table_id}:plan", response_model=PlanResult, dependencies=[Operator],
             responses=problems(*OPERATOR, 400, 404, 409, 413, 422,
                                d409="The table is disabled, or another planner holds it"),
             summary="Plan a table service now",
             description="Plans the service on the table at once, under the table's planning lock, whatever its "
                         "trigger says, and records its task (the worker runs it). 404 for an unknown table; 409 "
                         "for a disabled table, or one another planner holds for longer than a few seconds; 422 "
                         "when the table cannot be planned as asked (compaction of a COPY_ON_WRITE table).")
def plan_table(table_id: TableId, body: PlanRequest, request: Request) -> dict[str, Any]:
    tasks = request.app.state.planner.plan(table_id, body.service)
    return {"table_id": table_id, "service": body.service, "tasks": [TaskOut.model_validate(t) for t in tasks]}
