"""The dashboard's pages and form actions under /ui/ (and `/` redirecting there).

Every page needs a signed-in user (session.py); operator actions need the operator role, table and queue
settings the admin role, and every form its CSRF token. Pages mark their main part with `data-refresh`, which
the dashboard's script reloads while the page is open."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from pydantic import ValidationError

from tms import display
from tms.db import (
    ACTION_SOURCES,
    AlertRepo,
    InstanceRepo,
    MuteRepo,
    OperatorAction,
    QueueRepo,
    TableRepo,
    TaskRepo,
    TaskState,
)
from tms.errors import ONE_LINE_ERRORS
from tms.hudi.table.inspect import human_size
from tms.table_service import TableService

from ..actions.alerts import ACKNOWLEDGED_TYPES, acknowledge_alert, add_mute
from ..actions.restores import restore_in_place, restore_to_new_path
from ..actions.tables import change_table
from ..auth import Role
from ..errors import validation_detail
from ..schemas.admin import QueueIn, QueueKind
from ..schemas.manager import MuteIn
from ..schemas.restore import RestoreRequest
from ..schemas.tables import TableChanges
from ..writer_options import writer_options
from . import manager_data, views
from .session import (
    CSRF_FIELD,
    SIGN_IN_CSRF_COOKIE,
    DashboardUser,
    Refused,
    SignInRequired,
    check_csrf,
    dashboard_user,
    end_session,
    remember_sign_in_csrf,
    role_for_sign_in,
    sign_in_csrf,
    start_session,
)

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=HERE / "templates")
router = APIRouter(prefix="/ui", include_in_schema=False)
User = Annotated[DashboardUser, Depends(dashboard_user)]
REFRESH_SECONDS = 5


def _ago(moment: datetime | None) -> str:
    if moment is None:
        return ""
    seconds = int((datetime.now(UTC) - moment).total_seconds())
    if seconds < 0:
        return f"in {views.duration(datetime.now(UTC), moment, moment)}"
    return f"{views.duration(moment, datetime.now(UTC), datetime.now(UTC))} ago"


def _dotted_breaks(key: str) -> Markup:
    """A policy key that may wrap only after its dots (hoodie.<wbr>clustering.<wbr>...), never mid-word."""
    return Markup(".<wbr>").join(escape(part) for part in key.split("."))


def _when(moment: datetime | None) -> str:
    return display.moment(moment) if moment else ""


templates.env.filters.update(human_size=lambda n: human_size(int(n or 0)), ago=_ago, when=_when,
                             plan_summary=display.plan_summary, operation_sizes=display.operation_sizes,
                             size_histogram=display.size_histogram, dotted_breaks=_dotted_breaks,
                             shown=lambda v: display.yes_no(v) if isinstance(v, bool) else v,
                             policy_value=display.policy_value, resources=display.resources,
                             when_and_age=lambda m: display.moment_and_age(m) if m else "")


def _page(request: Request, name: str, user: DashboardUser | None, status_code: int = 200,
          **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, name, {
        "user": user, "csrf_field": CSRF_FIELD, "notice": request.query_params.get("notice"),
        "notice_level": request.query_params.get("level", "info"), "refresh": REFRESH_SECONDS,
        "Role": Role, **context}, status_code=status_code)


def _back(path: str, notice: str, level: str = "info") -> RedirectResponse:
    separator = "&" if "?" in path else "?"
    return RedirectResponse(f"{path}{separator}{urlencode({'notice': notice, 'level': level})}", status_code=303)


def _local(path: str | None) -> str:
    """A redirect target inside the dashboard only (never another site)."""
    if not path or not path.startswith("/ui") or urlsplit(path).netloc or path.startswith("//"):
        return "/ui/"
    return path


async def _form(request: Request, user: User) -> dict[str, str]:
    """The posted form (a dependency), once its CSRF token is checked. Read here, on the event loop, so that the
    form actions themselves are plain functions: their database work runs in the threadpool, never on the loop."""
    form = await request.form()
    check_csrf(form.get(CSRF_FIELD), user.csrf_token)
    return {k: v for k, v in form.items() if isinstance(v, str)}


Form = Annotated[dict[str, str], Depends(_form)]


def _require(user: DashboardUser, minimum: Role) -> None:
    if not user.may(minimum):
        raise Refused(403, f"This needs the {minimum} role; you are signed in as {user.role}.")


def _database(request: Request):
    return request.app.state.database


# --- sign in and out -------------------------------------------------------------------------------------
@router.get("/login")
def sign_in_page(request: Request, next: str = "/ui/") -> HTMLResponse:
    csrf = sign_in_csrf(request)
    response = _page(request, "login.html", None, next=_local(next), sign_in_csrf=csrf)
    remember_sign_in_csrf(response, request, csrf)
    return response


@router.post("/login")
async def sign_in(request: Request) -> Response:
    form = await request.form()
    check_csrf(form.get(CSRF_FIELD), request.cookies.get(SIGN_IN_CSRF_COOKIE))
    token = str(form.get("token") or "").strip()
    target = _local(str(form.get("next") or "/ui/"))
    role = await role_for_sign_in(request, token)
    if role is None:
        csrf = sign_in_csrf(request)
        response = _page(request, "login.html", None, status_code=401, next=target, sign_in_csrf=csrf,
                         error="Unknown, revoked or expired token.")
        remember_sign_in_csrf(response, request, csrf)
        return response
    redirect = RedirectResponse(target, status_code=303)
    start_session(redirect, request, token)
    return redirect


@router.post("/logout")
async def sign_out(request: Request, user: User, form: Form) -> Response:
    response = RedirectResponse("/ui/login", status_code=303)
    end_session(response)
    return response


# --- pages -----------------------------------------------------------------------------------------------
@router.get("/")
def overview_page(request: Request, user: User) -> HTMLResponse:
    with _database(request).transaction() as session:
        data = views.overview(session, datetime.now(UTC), request.app.state.table_context)
        manager = manager_data.leader(session, request.app.state.settings)
    return _page(request, "overview.html", user, manager=manager, **data)


@router.get("/tables")
def tables_page(request: Request, user: User, q: str = "", health: str = "", table_type: str = "",
                enabled: str = "") -> HTMLResponse:
    state = {"true": True, "false": False}.get(enabled)
    with _database(request).transaction() as session:
        rows = views.table_rows(session, request.app.state.table_context, name=q.strip(), health=health,
                                table_type=table_type, enabled=state)
    return _page(request, "tables.html", user, rows=rows, q=q, health=health, table_type=table_type,
                 enabled=enabled, scanned=views.TABLES_SCANNED)


@router.get("/tables/{table_id}")
def table_page(request: Request, user: User, table_id: int) -> HTMLResponse:
    with _database(request).transaction() as session:
        try:
            settings = request.app.state.settings
            data = views.table_detail(session, table_id, settings, request.app.state.table_context)
        except LookupError:
            raise Refused(404, f"There is no table with id {table_id}.") from None
    options = writer_options(settings, request, table_has_own_key=data["table"].callback_key_hash is not None)
    return _page(request, "table.html", user, now=datetime.now(UTC), duration=views.duration,
                 writer_options=options, scan_seconds=settings.planner.scan_seconds, **data)


@router.post("/tables/{table_id}/settings")
def table_settings(request: Request, user: User, table_id: int, form: Form) -> Response:
    _require(user, Role.ADMIN)
    page = f"/ui/tables/{table_id}"
    try:
        changes: dict[str, Any] = {"priority": int(form.get("priority", "0") or 0),
                                   "queue": form.get("queue") or None, "enabled": form.get("enabled") == "on",
                                   "policies": _policy_lines(form.get("policies", ""))}
        with _database(request).transaction() as session:
            table = TableRepo(session).get(table_id)
            own = table.own_settings or {}
            # A priority or queue left as its policy template gave it stays the template's (not the table's own).
            for key in ("priority", "queue"):
                if key not in own and changes[key] == getattr(table, key):
                    del changes[key]
            change_table(session, request.app.state.settings, table_id, TableChanges(**changes),
                         request.app.state.table_context)
        request.app.state.intake.forget_tables()
    except ValueError as exc:  # int(), a malformed policy line, pydantic's ValidationError
        return _back(page, _message(exc), "error")
    except RequestValidationError as exc:
        return _back(page, validation_detail(exc.errors()), "error")
    except ONE_LINE_ERRORS as exc:
        return _back(page, str(exc), "error")
    return _back(page, "Table settings saved.")


@router.post("/tables/{table_id}/restore")
def table_restore(request: Request, user: User, table_id: int, form: Form) -> Response:
    """An admin's restore in place to a savepoint (the form asks for confirmation first)."""
    _require(user, Role.ADMIN)
    page = f"/ui/tables/{table_id}"
    try:
        with _database(request).transaction() as session:
            task = restore_in_place(session, table_id, form.get("savepoint", ""), force=form.get("force") == "on",
                                    context=request.app.state.table_context)
            task_id = task.id
    except ONE_LINE_ERRORS as exc:
        return _back(page, str(exc), "error")
    return _back(page, f"Restore to savepoint {form.get('savepoint')}: task {task_id} recorded; a worker runs it.")


@router.post("/tables/{table_id}/backup-restore")
def table_backup_restore(request: Request, user: User, table_id: int, form: Form) -> Response:
    """An admin's restore of a backup version to a new base path, confirmed on the form."""
    _require(user, Role.ADMIN)
    page = f"/ui/tables/{table_id}"
    if form.get("confirm") != "on":
        return _back(page, "Nothing restored: confirm the restore.", "error")
    try:
        body = RestoreRequest(version=int(form.get("version", "0") or 0), target_path=form.get("target_path") or None,
                              catch_up=form.get("catch_up") == "on")
        with _database(request).transaction() as session:
            task_id = restore_to_new_path(session, request.app.state.settings, table_id, body,
                                          context=request.app.state.table_context).id
    except ValueError as exc:  # int(), pydantic's ValidationError
        return _back(page, _message(exc), "error")
    except RequestValidationError as exc:
        return _back(page, validation_detail(exc.errors()), "error")
    except ONE_LINE_ERRORS as exc:
        return _back(page, str(exc), "error")
    return _back(page, f"Restore requested: task {task_id}.")


def _policy_lines(text: str) -> dict[str, Any]:
    """`key=value` lines; `key=` (no value) returns the option to its default."""
    policies: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"policy line {number} is not key=value: {line!r}")
        policies[key.strip()] = value.strip() or None
    return policies


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return validation_detail(exc.errors())
    return str(exc)


@router.get("/tasks")
def tasks_page(request: Request, user: User, state: str = "", service: str = "", table: str = "",
               table_id: str = "", page: int = 1) -> HTMLResponse:
    """The tasks, newest first, filtered by state, service and table (`table`: its name, database.name or id;
    `table_id` as the table page links)."""
    filters: dict[str, Any] = {}
    if state in views.TASK_STATES:
        filters["state"] = TaskState(state)
    if service in [s.value for s in TableService]:
        filters["service"] = service
    table = table.strip() or table_id.strip()
    page = max(page, 1)
    tasks: list[Any] = []
    total, unknown_table = 0, None
    with _database(request).transaction() as session:
        if table:
            found = views.table_named(session, table)
            if found is None:
                unknown_table = f"No table is named {table!r} (give its name, database.name or id)."
            else:
                filters["table_id"] = found
        if unknown_table is None:
            tasks, total = TaskRepo(session).find(limit=views.PAGE_SIZE, offset=(page - 1) * views.PAGE_SIZE,
                                                  **filters)
        names = views.table_names(session, {t.table_id for t in tasks})
    return _page(request, "tasks.html", user, tasks=tasks, total=total, names=names, state=state, service=service,
                 table=table, unknown_table=unknown_table, page=page, pages=max(1, -(-total // views.PAGE_SIZE)),
                 states=views.TASK_STATES, services=[s.value for s in TableService], now=datetime.now(UTC),
                 duration=views.duration)


@router.get("/tasks/{task_id}")
def task_page(request: Request, user: User, task_id: int) -> HTMLResponse:
    with _database(request).transaction() as session:
        try:
            data = views.task_detail(session, task_id)
        except LookupError:
            raise Refused(404, f"There is no task with id {task_id}.") from None
    return _page(request, "task.html", user, now=datetime.now(UTC), duration=views.duration,
                 actions=_actions_for(data["task"].state), **data)


def _actions_for(state: str) -> list[str]:
    return [action.value for action, sources in ACTION_SOURCES.items() if TaskState(state) in sources]


@router.post("/tasks/{task_id}/{action}")
def task_action(request: Request, user: User, task_id: int, action: str, form: Form) -> Response:
    _require(user, Role.OPERATOR)
    if action not in [a.value for a in OperatorAction]:
        raise Refused(404, f"There is no task action {action!r}.")
    try:
        with _database(request).transaction() as session:
            task = TaskRepo(session).apply(task_id, OperatorAction(action))
    except ONE_LINE_ERRORS as exc:
        return _back(f"/ui/tasks/{task_id}", str(exc), "error")
    return _back(f"/ui/tasks/{task_id}", f"Task {task_id}: {action} done; it is {task.state} now.")


@router.get("/queues")
def queues_page(request: Request, user: User) -> HTMLResponse:
    with _database(request).transaction() as session:
        queues = views.queue_usage(session)
    return _page(request, "queues.html", user, queues=queues, kinds=[k.value for k in QueueKind])


@router.post("/queues")
def queue_save(request: Request, user: User, form: Form) -> Response:
    _require(user, Role.ADMIN)
    name = form.get("name", "").strip()
    try:
        body = QueueIn(**_queue_fields(form))
        if not name or len(name) > 64 or not all(c.isalnum() or c in "_.-" for c in name):
            raise ValueError("a queue name is 1 to 64 letters, digits, '_', '.' or '-'")
        with _database(request).transaction() as session:
            QueueRepo(session).put(name, **body.model_dump(mode="json"))
    except ValueError as exc:
        return _back("/ui/queues", _message(exc), "error")
    return _back("/ui/queues", f"Queue {name} saved.")


def _queue_fields(form: dict[str, str]) -> dict[str, Any]:
    def listed(key: str) -> list[str] | None:
        items = [part.strip() for part in form.get(key, "").split(",") if part.strip()]
        return items or None

    fields: dict[str, Any] = {"kind": form.get("kind"), "master": form.get("master", ""),
                              "enabled": form.get("enabled") == "on",
                              "spark_conf": {k: str(v) for k, v in _policy_lines(form.get("spark_conf", "")).items()},
                              "allowed_databases": listed("allowed_databases"),
                              "allowed_tables": listed("allowed_tables"),
                              "allowed_services": listed("allowed_services")}
    for key in ("capacity", "executor_cores", "min_executor_memory_mb", "max_executor_memory_mb", "max_executors",
                "reserved_for_priority"):
        if form.get(key, "").strip():
            fields[key] = int(form[key])
    return fields


@router.post("/queues/{name}/delete")
def queue_delete(request: Request, user: User, name: str, form: Form) -> Response:
    _require(user, Role.ADMIN)
    try:
        with _database(request).transaction() as session:
            QueueRepo(session).delete(name)
    except ONE_LINE_ERRORS as exc:
        return _back("/ui/queues", str(exc), "error")
    return _back("/ui/queues", f"Queue {name} deleted.")


@router.get("/fleet")
def fleet_page(request: Request, user: User) -> HTMLResponse:
    with _database(request).transaction() as session:
        board = views.fleet_board(session, datetime.now(UTC))
    return _page(request, "fleet.html", user, **board)


@router.get("/engines")
def engines_page(request: Request, user: User) -> HTMLResponse:
    with _database(request).transaction() as session:
        board = views.engine_board(session, datetime.now(UTC))
    return _page(request, "engines.html", user, **board)


@router.get("/alerts")
def alerts_page(request: Request, user: User, show: str = "firing", severity: str = "",
                page: int = 1) -> HTMLResponse:
    page = max(page, 1)
    with _database(request).transaction() as session:
        alerts, total = AlertRepo(session).find(open_only=show == "firing",
                                                severity=severity if severity in ("info", "warning", "critical")
                                                else None, limit=views.PAGE_SIZE,
                                                offset=(page - 1) * views.PAGE_SIZE)
        names = views.table_names(session, {a.table_id for a in alerts if a.table_id})
    return _page(request, "alerts.html", user, alerts=alerts, total=total, names=names, show=show,
                 severity=severity, page=page, pages=max(1, -(-total // views.PAGE_SIZE)),
                 acknowledged_types=ACKNOWLEDGED_TYPES)


@router.post("/alerts/{alert_id}/mute")
def alert_mute(request: Request, user: User, alert_id: int, form: Form) -> Response:
    _require(user, Role.ADMIN)  # as the API: mutes are an admin's
    try:
        hours = float(form["hours"]) if form.get("hours", "").strip() else None
    except ValueError:
        return _back("/ui/alerts", f"The alert was not muted: {form['hours']!r} is not a number of hours", "error")
    with _database(request).transaction() as session:
        try:
            alert = AlertRepo(session).get(alert_id)
        except LookupError:
            raise Refused(404, f"There is no alert with id {alert_id}.") from None
        body: dict[str, Any] = {"alert_types": [alert.kind], "reason": form.get("reason", "")}
        if alert.table_id is not None:
            body["table_id"] = alert.table_id
        if hours is not None:
            body["expires_at"] = datetime.now(UTC) + timedelta(hours=hours)
        try:
            add_mute(session, MuteIn.model_validate(body))
        except (ValidationError,) + ONE_LINE_ERRORS as exc:
            return _back("/ui/alerts", f"The alert was not muted: {_message(exc)}", "error")
    return _back("/ui/alerts", f"Alerts of kind {alert.kind} muted.")


@router.post("/alerts/{alert_id}/acknowledge")
async def alert_acknowledge(request: Request, user: User, alert_id: int) -> Response:
    await _form(request, user)
    _require(user, Role.OPERATOR)  # as the API
    with _database(request).transaction() as session:
        try:
            alert = acknowledge_alert(session, request.app.state.settings, alert_id)
        except ONE_LINE_ERRORS as exc:
            return _back("/ui/alerts", f"The alert was not acknowledged: {_message(exc)}", "error")
    return _back("/ui/alerts", f"Alert {alert.kind} {alert.subject} acknowledged and resolved.")


@router.get("/mutes")
def mutes_page(request: Request, user: User) -> HTMLResponse:
    with _database(request).transaction() as session:
        mutes = manager_data.mutes(session)
    return _page(request, "mutes.html", user, mutes=mutes)


@router.post("/mutes/{mute_id}/delete")
def mute_delete(request: Request, user: User, mute_id: int, form: Form) -> Response:
    _require(user, Role.ADMIN)  # as the API: mutes are an admin's
    try:
        with _database(request).transaction() as session:
            MuteRepo(session).delete(mute_id)
    except ONE_LINE_ERRORS as exc:
        return _back("/ui/mutes", f"The mute was not removed: {_message(exc)}", "error")
    return _back("/ui/mutes", f"Mute {mute_id} removed.")


@router.get("/webhooks")
def webhooks_page(request: Request, user: User) -> HTMLResponse:
    _require(user, Role.ADMIN)  # as the API: webhooks (their URLs and deliveries) are an admin's
    with _database(request).transaction() as session:
        hooks = manager_data.webhooks(session)
    return _page(request, "webhooks.html", user, hooks=hooks)


@router.get("/instances")
def instances_page(request: Request, user: User) -> HTMLResponse:
    with _database(request).transaction() as session:
        instances = InstanceRepo(session).list()
        manager = manager_data.leader(session, request.app.state.settings)
    return _page(request, "instances.html", user, instances=instances, manager=manager,
                 stale_after=3 * request.app.state.settings.heartbeat_seconds, now=datetime.now(UTC))


@router.get("/{path:path}", include_in_schema=False)
def no_such_page(path: str, user: User) -> HTMLResponse:
    """Any other dashboard path (registered last): the error page, with the navigation."""
    raise Refused(404, f"There is no dashboard page at /ui/{path}.")


# --- installation ----------------------------------------------------------------------------------------
async def _on_sign_in_required(request: Request, exc: SignInRequired) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.method != "GET":
        target = "/ui/"
    response = RedirectResponse(f"/ui/login?{urlencode({'next': target})}", status_code=303)
    end_session(response)
    return response


async def _on_refused(request: Request, exc: Refused) -> Response:
    try:  # the page keeps the navigation of a signed-in user
        user: DashboardUser | None = await dashboard_user(request)
    except SignInRequired:
        user = None
    return _page(request, "error.html", user, status_code=exc.status_code, message=exc.message,
                 status=exc.status_code)


def install(app: FastAPI) -> None:
    """Serve the dashboard under /ui/, its assets under /ui/static, and redirect `/` to it."""
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")
    app.include_router(router)
    app.add_exception_handler(SignInRequired, _on_sign_in_required)  # type: ignore[arg-type]
    app.add_exception_handler(Refused, _on_refused)  # type: ignore[arg-type]

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @app.get("/ui", include_in_schema=False)
    def dashboard() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)
