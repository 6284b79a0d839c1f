"""The table registry: register, list, inspect, change policies, enable/disable, unregister."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response, status
from pydantic import ValidationError

from tms.db import EventRepo, RegisteredTable, RolloutRepo, TablePolicy, TableRepo, TaskRepo, TemplateRepo, hash_secret
from tms.hudi.errors import TableNotFoundError
from tms.hudi.locks import LockConfigError, parse_concurrency_options
from tms.hudi.storage.paths import is_under_roots
from tms.hudi.storage.table_storage import open_storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.write_options import split_concurrency_options
from tms.plan_pass.damage import reported_damaged_files
from tms.planning.templates import PRIORITY, QUEUE, Template, resolve
from tms.planning.ttl import ttl_policy_refusal

from ..auth import Admin, AuthenticatedFirst, Operator, Viewer
from ..errors import validation_error
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
from ..table_view import (
    capability_report,
    live_view,
    planner_outlook,
    registration_facts,
    registration_refusal,
    ttl_schedule,
)
from ..writer_options import writer_options
from .backups import BACKUP_DESTINATION, require_backup_destination

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/tables", tags=["tables"])
TableId = Annotated[Id, Path(description="The table's id")]
_COLUMNS = [name for name in TableOut.model_fields if name not in ("has_callback_key", "policies", "sources")]


def _out(table: RegisteredTable, templates: list[Template]) -> dict[str, Any]:
    """The table as the API gives it; `templates`: the policy templates (for where each setting comes from)."""
    policies = {**TablePolicy.from_stored(table.policies).options(), **table.concurrency_options}
    effective = resolve(table.own_settings or {}, next((t for t in templates if t.name == table.template), None))
    return {**{name: getattr(table, name) for name in _COLUMNS},
            "has_callback_key": table.callback_key_hash is not None, "policies": policies,
            "sources": {key: effective.source(key) for key in [*policies, QUEUE, PRIORITY]}}


def _own(table: RegisteredTable, key: str) -> dict[str, Any]:
    """The table's own policies or concurrency options (not its template's)."""
    return dict((table.own_settings or {}).get(key) or {})


def _policy(stored: dict[str, Any], changes: dict[str, Any], request: Request | None = None) -> TablePolicy:
    try:
        policy = TablePolicy.from_stored(stored).merged(changes)
    except ValidationError as exc:
        raise validation_error(exc.errors(), "body", "policies") from None
    if request is not None and changes.get(BACKUP_DESTINATION):  # the same check as PUT .../backup's
        require_backup_destination(request, policy.backup_destination, "policies", BACKUP_DESTINATION)
    return policy


def _require_applicable_ttl(table: HudiTable, policy: TablePolicy) -> None:
    """A TTL option the table cannot honour (a field that holds no time, no partitions) is refused, in one line."""
    refusal = ttl_policy_refusal(table, policy)
    if refusal:
        option, message = refusal
        raise validation_error([{"loc": (option,), "type": "value_error", "msg": message}], "body", "policies")


def _concurrency(stored: dict[str, str], changes: dict[str, Any], *, base_path: str, table_name: str
                 ) -> dict[str, str]:
    """The table's concurrency options after `changes` (a None value removes one), validated as TMS will use
    them to take the writers' lock: a provider TMS cannot share is refused with its one line."""
    for key, value in changes.items():
        if isinstance(value, dict | list):
            raise _lock_error(key, f"{key} must be a string, number or boolean")
    combined = {k: str(v) for k, v in {**stored, **changes}.items() if v is not None}
    try:
        config = parse_concurrency_options(combined, base_path=base_path, table_name=table_name)
    except LockConfigError as exc:
        raise _lock_error(next(iter(changes), "policies"), str(exc)) from None
    return dict(config.options)


def _lock_error(key: str, message: str):
    return validation_error([{"loc": (key,), "type": "value_error", "msg": message}], "body", "policies")


def _no_table_there(base_path: str) -> str:
    """Why there is no Hudi table at `base_path`: nothing is there, or something that is not a Hudi table."""
    try:
        there = open_storage(base_path).exists("")
    except Exception:  # noqa: BLE001 (a storage that cannot say: the plain reason)
        there = True
    if not there:
        return f"{base_path} does not exist"
    return f"{base_path} is not a Hudi table: it has no .hoodie/hoodie.properties"


def _forget_cached_identities(request: Request) -> None:
    request.app.state.intake.tables.clear()


@router.post("", status_code=status.HTTP_201_CREATED, response_model=TableRegistered, dependencies=[Admin],
             summary="Register a table by its base path",
             responses=problems(*ADMIN, 400, 409, 413, 422, d409="The base path is registered already",
                                d422="Malformed, outside the storage roots, not a Hudi table TMS can read, or a "
                                     "table TMS can neither read nor run any table service on"))
def register_table(body: TableRegistration, request: Request) -> dict[str, Any]:
    """Reads the table's `hoodie.properties` (type, version, key fields). The path must lie under
    one of TMS_STORAGE_ROOTS. Registering changes nothing on storage. The answer's `capabilities` say what
    TMS can do for the table: reading and each table service, and why not the others."""
    roots = request.app.state.settings.storage_roots
    if not is_under_roots(body.base_path, roots):
        raise validation_error([{"loc": ("base_path",), "type": "value_error",
                                 "msg": f"{body.base_path} is outside the storage roots ({', '.join(roots)})"}],
                               "body")
    concurrency_changes, policy_changes = split_concurrency_options(body.policies)
    policy = _policy({}, policy_changes, request)
    try:
        hudi_table = HudiTable.load(body.base_path)
        facts = registration_facts(hudi_table)
        planner_services = frozenset(request.app.state.settings.planner_services)
        report = capability_report(hudi_table, policy=policy, planner_services=planner_services)
    except TableNotFoundError:
        raise validation_error([{"loc": ("base_path",), "type": "value_error",
                                 "msg": _no_table_there(body.base_path)}], "body") from None
    except Exception as exc:  # unreadable, unsupported version: all bad input here
        raise validation_error([{"loc": ("base_path",), "type": "value_error", "msg": str(exc)}], "body") from None
    refusal = registration_refusal(report)
    if refusal:
        raise validation_error([{"loc": ("base_path",), "type": "value_error", "msg": refusal}], "body")
    _require_applicable_ttl(hudi_table, policy)
    concurrency = _concurrency({}, concurrency_changes, base_path=body.base_path, table_name=facts["name"])
    with request.app.state.database.transaction() as session:
        table = TableRepo(session).register(
            base_path=body.base_path, enabled=body.enabled, owner=body.owner, queue=body.queue,
            priority=body.priority if "priority" in body.model_fields_set else None,
            policies=policy.explicit(), concurrency_options=concurrency,
            callback_key_hash=hash_secret(body.callback_key) if body.callback_key else None, **facts)
        # What the planner schedules follows the policies as its template completes them.
        report = capability_report(hudi_table, policy=TablePolicy.from_stored(table.policies),
                                   planner_services=planner_services)
        return {**_out(table, TemplateRepo(session).templates()), "capabilities": report,
                "writer_options": writer_options(request.app.state.settings, request,
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
        policy = TablePolicy.from_stored(table.policies)
        ttl_tasks = ttl_schedule(session, table_id, policy)
        out = _out(table, TemplateRepo(session).templates())
        hudi_engine = RolloutRepo(session).hudi_engine_for(queue=table.queue, database=table.database,
                                                           table=table.name)
        last_event_at = EventRepo(session).last_received_at(table_id)
        damaged = reported_damaged_files(session, table_id)
    settings = request.app.state.settings
    view = live_view(table.base_path, policy, health_counts, table.enabled, ttl_tasks,
                     clean_commits=settings.planner_clean_commits,
                     orphan_safety_seconds=settings.orphan_safety_hours * 3600, hudi_engine=hudi_engine,
                     planner_state=table.planner_state, planner_services=frozenset(settings.planner_services),
                     damaged_files=damaged)
    return {**out, **view, "properties": table.properties, "tasks_by_state": tasks_by_state,
            "services": planner_outlook(table.planner_state, settings),
            "writer_options": writer_options(settings, request, table_has_own_key=out["has_callback_key"]),
            "last_event_at": last_event_at}


@router.patch("/{table_id}", response_model=TableOut, dependencies=[Admin],
              summary="Change policies, priority, queue, callback key; enable or disable",
              responses=problems(*ADMIN, 400, 404, 413, 422))
def update_table(table_id: TableId, body: TableChanges, request: Request) -> dict[str, Any]:
    return apply_table_changes(request, table_id, body)


def apply_table_changes(request: Request, table_id: int, body: TableChanges) -> dict[str, Any]:
    """Apply an admin's changes to a table (the API's PATCH and the dashboard's form): the table as `_out`
    gives it. RequestValidationError for a policy that cannot be used."""
    changes = body.model_dump(exclude_unset=True)
    with request.app.state.database.transaction() as session:
        repo = TableRepo(session)
        table = repo.get(table_id)
        if "policies" in changes:
            concurrency_changes, policy_changes = split_concurrency_options(changes["policies"] or {})
            policy = _policy(_own(table, "policies"), policy_changes, request)
            if policy.record_ttl or policy.partition_ttl:
                _require_applicable_ttl(HudiTable.load(table.base_path), policy)
            changes["policies"] = policy.explicit()
            if concurrency_changes:
                changes["concurrency_options"] = _concurrency(_own(table, "concurrency_options"), concurrency_changes,
                                                              base_path=table.base_path, table_name=table.name)
        if "callback_key" in changes:
            key = changes.pop("callback_key")
            changes["callback_key_hash"] = hash_secret(key) if key else None
        table = repo.update(table_id, **changes)
        out = _out(table, TemplateRepo(session).templates())
    _forget_cached_identities(request)
    return out


@router.delete("/{table_id}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               summary="Unregister a table (its files are never touched)",
               responses=problems(*ADMIN, 404, 409, 422, d409="One of the table's tasks is running"))
def delete_table(table_id: TableId, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        TableRepo(session).unregister(table_id)
    _forget_cached_identities(request)
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
