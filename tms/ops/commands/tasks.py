"""`tms tasks list|show|logs|rerun|suspend|resume|cancel`: the planned work and the operator's actions on
it, one task by id or many by filter (`tms tasks rerun --state FAILED --table 3`)."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from tms import display
from tms.errors import TMSError

from .. import output
from ..client import ApiError, TmsClient
from ..names import SERVICES, TASK_STATES
from ..options import DEFAULT_URL, Json, Token, Url, connect, one_of
from ..output import output_for
from .table_ref import table_id, table_names

app = typer.Typer(help="Tasks: the table services planned, and the operator's actions on them.",
                  no_args_is_help=True)
# The states each action applies to (the service refuses the others): what a bulk action selects by default.
ACTION_SOURCES = {"rerun": ("FAILED", "CANCELLED"), "suspend": ("BLOCKED", "RUNNABLE", "FAILED"),
                  "resume": ("SUSPENDED",),
                  "cancel": ("PENDING", "BLOCKED", "RUNNABLE", "RUNNING", "FAILED", "SUSPENDED")}
PAST = {"rerun": "rerun", "suspend": "suspended", "resume": "resumed", "cancel": "cancelled"}

TaskId = Annotated[int, typer.Argument(min=1, help="The task's id.", show_default=False)]
TableRef = Annotated[str | None, typer.Option("--table", help="Only this table's tasks (id or name).")]
Service = Annotated[str | None, typer.Option("--service", help=f"Only this service: {', '.join(SERVICES)}.")]
State = Annotated[str | None, typer.Option("--state", help=f"Only tasks in this state: {', '.join(TASK_STATES)}.")]


def _duration(task: dict[str, Any]) -> str | None:
    if not (task.get("started_at") and task.get("finished_at")):
        return None
    took = datetime.fromisoformat(task["finished_at"]) - datetime.fromisoformat(task["started_at"])
    return display.duration(took.total_seconds())


def _table(task: dict[str, Any]) -> str:
    """The task's table by name (`table_name`, added by the command from the table list), else its id."""
    return str(task.get("table_name") or task["table_id"])


def _resources(attempt: dict[str, Any]) -> str:
    return display.resources(attempt.get("requested_resources"))


COLUMNS = [("ID", output.field("id")), ("TABLE", _table), ("SERVICE", output.field("service")),
           ("INSTANT", output.field("instant")), ("STATE", output.field("state")),
           ("ATTEMPT", output.field("attempt")), ("QUEUE", output.field("queue")),
           ("CREATED", output.time_field("created_at")), ("TOOK", _duration), ("ERROR", output.field("error"))]
ATTEMPT_COLUMNS = [("ATTEMPT", output.field("attempt")), ("WORKER", output.field("worker")),
                   ("QUEUE", output.field("queue")), ("ENGINE", lambda a: a.get("engine") or "-"),
                   ("SPARK APP", output.field("spark_app_id")),
                   ("RESOURCES", _resources), ("OUTCOME", output.field("outcome")),
                   ("STARTED", output.time_field("started_at")), ("TOOK", _duration),
                   ("ERROR", output.field("error"))]


def _filters(client: TmsClient, table: str | None, service: str | None, state: str | None) -> dict[str, Any]:
    return {"table_id": table_id(client, table) if table else None,
            "service": one_of(service, SERVICES, "--service"),
            "state": one_of(state, TASK_STATES, "--state", upper=True)}


@app.command("list")
def list_tasks(table: TableRef = None, service: Service = None, state: State = None,
               since: Annotated[datetime | None, typer.Option(help="Created at or after (ISO 8601).")] = None,
               until: Annotated[datetime | None, typer.Option(help="Created before (ISO 8601).")] = None,
               limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
               offset: Annotated[int, typer.Option(min=0)] = 0,
               url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """List tasks, newest first."""
    with connect(url, token) as client:
        page = client.get("/tasks", **_filters(client, table, service, state), limit=limit, offset=offset,
                          since=since.isoformat() if since else None, until=until.isoformat() if until else None)
        names = {} if as_json else table_names(client, {t["table_id"] for t in page["items"]})
    rows = [{**t, "table_name": names.get(t["table_id"])} for t in page["items"]]
    output_for(as_json).page({**page, "items": rows} if names else page, COLUMNS, empty="no task")


@app.command("show")
def show_task(task_id: TaskId,
              operations: Annotated[bool, typer.Option("--operations", help="Also each operation's size, under "
                                                                           "the plan's summary.")] = False,
              url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """A task and its attempts; its plan as a summary (operations, total, largest)."""
    with connect(url, token) as client:
        task = client.get(f"/tasks/{task_id}")
        name = None if as_json else table_names(client, {task["table_id"]}).get(task["table_id"])
    output_for(as_json).show(task, lambda: _task_text({**task, "table_name": name}, operations))


def _task_text(task: dict[str, Any], operations: bool) -> str:
    table = f"{task['table_name']} (id {task['table_id']})" if task.get("table_name") else task["table_id"]
    text = output.record([
        ("task", task["id"]), ("table", table), ("service", task["service"]),
        ("instant", task["instant"]), ("target instant", task.get("target_instant")), ("state", task["state"]),
        ("attempt", task["attempt"]), ("priority", task["priority"]), ("queue", task["queue"]),
        ("plan", display.plan_summary(task.get("plan_stats"))),
        ("plan sizes", ", ".join(f"{label}: {n}" for label, n in display.size_histogram(task.get("plan_stats")))
         or None), ("blockers", task.get("blockers")),
        ("lease", f"{task['lease_owner']} until {output.when(task['lease_expires_at'])}"
         if task.get("lease_owner") else None),
        ("spark app", task.get("spark_app_id")), ("next attempt after", output.when(task.get("run_after"))),
        ("created", output.when(task["created_at"])), ("started", output.when(task.get("started_at"))),
        ("finished", output.when(task.get("finished_at"))), ("error", task.get("error"))])
    if operations:
        sizes = display.operation_sizes(task.get("plan_stats"))
        text += "\n\noperations (bytes each reads):\n" + ("\n".join(f"  {n}. {s}" for n, s in enumerate(sizes, 1))
                                                          or "  none")
    return text + "\n\nattempts:\n" + output.table(task["attempts"], ATTEMPT_COLUMNS, empty="none yet",
                                                    whole=("RESOURCES",))


@app.command("logs")
def task_logs(task_id: TaskId,
              attempt: Annotated[int | None, typer.Option(min=1, help="This attempt (default: the last).")] = None,
              url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The end of a task attempt's job output (the service keeps its last 8 KB)."""
    with connect(url, token) as client:
        task = client.get(f"/tasks/{task_id}")
    attempts = task["attempts"]
    if not attempts:
        raise TMSError(f"task {task_id} has not run yet: no log")
    chosen = attempts[-1] if attempt is None else next((a for a in attempts if a["attempt"] == attempt), None)
    if chosen is None:
        raise TMSError(f"task {task_id} has no attempt {attempt} (attempts: "
                       f"{', '.join(str(a['attempt']) for a in attempts)})")
    out, tail = output_for(as_json), chosen.get("log_tail")
    out.show({"task_id": task_id, "attempt": chosen["attempt"], "worker": chosen["worker"],
              "outcome": chosen["outcome"], "log_tail": tail}, tail.rstrip("\n") if tail else None)
    if not tail:
        out.note(f"(attempt {chosen['attempt']} recorded no output yet)", err=True)


def _selected(client: TmsClient, action: str, ids: list[int], table: str | None, service: str | None,
              state: str | None) -> list[int]:
    if ids and (table or service or state):
        raise TMSError("give task ids or --table/--service/--state, not both")
    if ids:
        return ids
    if not (table or service or state):
        raise TMSError(f"give the ids of the tasks to {action}, or select them with --state, --table or --service")
    filters = _filters(client, table, service, state)
    chosen = filters.pop("state")
    states = [chosen] if chosen else list(ACTION_SOURCES[action])
    found: list[int] = []
    for one in states:
        found += [t["id"] for t in client.all_pages("/tasks", **filters, state=one)]
    return sorted(found)


def _act(action: str, ids: list[int], table: str | None, service: str | None, state: str | None,
         url: str, token: str | None, as_json: bool) -> None:
    done: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    out = output_for(as_json)
    with connect(url, token) as client:
        selected = _selected(client, action, ids, table, service, state)
        for task_id in selected:
            try:
                task = client.post(f"/tasks/{task_id}:{action}")
            except ApiError as e:
                if len(selected) == 1:
                    raise
                failed.append({"id": task_id, "error": str(e)})
                out.note(f"task {task_id}: not {PAST[action]}: {e}")
                continue
            done.append(task)
            out.note(f"task {task_id}: {task['service']} {task['instant']} {task['state']}")
    out.show({"done": done, "failed": failed}, None if selected else "no task matches")
    if failed:
        raise TMSError(f"{len(failed)} of {len(selected)} task(s) could not be {PAST[action]}")


def _action_command(action: str, help_text: str) -> None:
    def command(ids: Annotated[list[int] | None, typer.Argument(help="Task ids.", show_default=False)] = None,
                table: TableRef = None, service: Service = None, state: State = None,
                url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
        _act(action, ids or [], table, service, state, url, token, as_json)

    command.__doc__ = help_text
    # The state option's help names this action's default states (a real annotation, not a string).
    command.__annotations__["state"] = Annotated[str | None, typer.Option(
        "--state", help=f"Select the tasks in this state (default: {', '.join(ACTION_SOURCES[action])}).")]
    app.command(action)(command)


_action_command("rerun", "Run failed or cancelled tasks again (by id, or all matching --state/--table/--service).")
_action_command("suspend", "Hold blocked, runnable or failed tasks.")
_action_command("resume", "Release suspended tasks.")
_action_command("cancel", "Abandon tasks; a running job is stopped by its worker.")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tasks")
