"""`tms backups policy|list|take|restore`: a table's backups (over the API)."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from tms import display

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, confirm, connect
from ..output import output_for
from .table_ref import table_id

app = typer.Typer(help="A table's backups: its policy, the versions kept, a backup now, a restore.",
                  no_args_is_help=True)
Ref = Annotated[str, typer.Argument(help="The table: its id, name or database.name.", show_default=False)]

COLUMNS = [("VERSION", output.field("version")), ("INSTANT", output.field("instant")),
           ("STATE", output.field("state")), ("FILES", output.field("files")),
           ("COPIED", lambda b: display.size(b.get("bytes_copied"))),
           ("SIZE", lambda b: display.size(b.get("total_bytes"))), ("CREATED", output.time_field("created_at"))]


def _task_line(task: dict[str, Any], what: str) -> str:
    return f"{what}: task {task['id']} ({task['service']} {task['instant']}, {task['state']})"


@app.command("policy")
def set_policy(ref: Ref, destination: Annotated[str, typer.Option(help="The root backups go under.")],
               schedule: Annotated[str, typer.Option(help="daily, hourly or a cron expression (UTC).")] = "daily",
               keep: Annotated[int, typer.Option("--keep", min=1, help="Versions kept.")] = 7,
               url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Set the table's backup policy (admin)."""
    with connect(url, token) as client:
        policy = client.put(f"/tables/{table_id(client, ref)}/backup",
                            {"destination": destination, "schedule": schedule, "keep_versions": keep})
    output_for(as_json).show(policy, f"table {policy['table_id']}: backups {policy['schedule']} to "
                                     f"{policy['root']}, {policy['keep_versions']} kept")


@app.command("list")
def list_backups(ref: Ref, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The versions kept, oldest first, and the table's newest backup tasks."""
    with connect(url, token) as client:
        listed = client.get(f"/tables/{table_id(client, ref)}/backups")
    output_for(as_json).show(listed, lambda: _listing(listed))


def _listing(listed: dict[str, Any]) -> str:
    active = [t for t in listed["tasks"] if t["state"] not in ("SUCCEEDED", "FAILED", "CANCELLED")]
    return "\n".join([f"{listed['root']}:", output.table(listed["items"], COLUMNS, empty="no backup version"),
                      *(_task_line(task, "in progress") for task in active)])


@app.command("take")
def take_backup(ref: Ref, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Take a backup now (operator): a worker runs it."""
    with connect(url, token) as client:
        task = client.post(f"/tables/{table_id(client, ref)}/backups")
    output_for(as_json).show(task, _task_line(task, "backup requested"))


@app.command("restore")
def restore(ref: Ref, target_path: Annotated[str, typer.Option(help="A new base path (empty or absent).")],
            version: Annotated[int | None, typer.Option(min=1, help="The backup version.")] = None,
            savepoint: Annotated[str | None, typer.Option(help="Or a savepoint of the table (its instant).")] = None,
            catch_up: Annotated[bool, typer.Option(
                "--catch-up", help="A version: then apply the table's instants completed since it.")] = False,
            yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
            url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Restore a backup version (or a savepoint) of the table to a new base path (admin): a worker runs it."""
    body: dict[str, Any] = {"target_path": target_path}
    if version is not None:
        body["version"] = version
    if savepoint is not None:
        body["savepoint"] = savepoint
    if catch_up:
        body["catch_up"] = True
    what = f"backup version {version}" if savepoint is None else f"savepoint {savepoint}"
    with connect(url, token) as client:
        tid = table_id(client, ref)
        if not yes:
            confirm(f"restore {what} of table {tid} to {target_path}?", "nothing restored")
        task = client.post(f"/tables/{tid}/restore", body)
    output_for(as_json).show(task, _task_line(task, "restore requested"))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="backups")
