"""`tms queues list|set|delete`: the resource queues jobs run in."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect, key_values
from ..output import output_for

app = typer.Typer(help="Resource queues: where jobs run, and how many at once.", no_args_is_help=True)
Name = Annotated[str, typer.Argument(help="The queue's name.", show_default=False)]


def _kind_of(master: str) -> str:
    """The queue kind a Spark master implies."""
    if master.startswith("spark://"):
        return "standalone"
    if master.startswith("k8s://"):
        return "kubernetes"
    if master == "yarn":
        return "yarn"
    return "local"


def _restrictions(queue: dict[str, Any]) -> str:
    parts = [f"{label} {','.join(queue[key])}" for key, label in (
        ("allowed_databases", "databases"), ("allowed_tables", "tables"), ("allowed_services", "services"))
        if queue.get(key)]
    if queue.get("reserved_for_priority") is not None:
        parts.append(f"priority >= {queue['reserved_for_priority']}")
    return "; ".join(parts) or "-"


COLUMNS = [("NAME", output.field("name")), ("KIND", output.field("kind")), ("MASTER", output.field("master")),
           ("RUNNING", lambda q: f"{q.get('running', 0)}/{q['capacity']}"),
           ("EXECUTORS", lambda q: f"<= {q['max_executors']} x {q['executor_cores']} core(s)"),
           ("MEMORY MB", lambda q: f"{q['min_executor_memory_mb']}-{q['max_executor_memory_mb']}"),
           ("RESTRICTIONS", _restrictions), ("ENABLED", output.field("enabled"))]
# The fields of a queue's body (PUT replaces the queue, so `set` sends them all).
BODY_FIELDS = ("kind", "master", "spark_conf", "capacity", "executor_cores", "min_executor_memory_mb",
               "max_executor_memory_mb", "max_executors", "reserved_for_priority", "allowed_databases",
               "allowed_tables", "allowed_services", "enabled")


@app.command("list")
def list_queues(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The queues, with their running jobs against capacity."""
    with connect(url, token) as client:
        queues = client.get("/queues")
    output_for(as_json).rows(queues, COLUMNS, empty="no queue: the first worker creates 'local'")


def _names(value: str | None) -> list[str] | None:
    names = [n.strip() for n in (value or "").split(",") if n.strip()]
    return names or None


@app.command("set")
def set_queue(name: Name,
              master: Annotated[str | None, typer.Option(help="spark-submit --master: local[*], spark://h:7077, "
                                                              "yarn, k8s://...")] = None,
              kind: Annotated[str | None, typer.Option(help="local | standalone | yarn | kubernetes "
                                                            "(default: from --master)")] = None,
              capacity: Annotated[int | None, typer.Option(help="Jobs running at once.")] = None,
              executor_cores: Annotated[int | None, typer.Option()] = None,
              min_executor_memory_mb: Annotated[int | None, typer.Option()] = None,
              max_executor_memory_mb: Annotated[int | None, typer.Option()] = None,
              max_executors: Annotated[int | None, typer.Option()] = None,
              reserved_for_priority: Annotated[int | None, typer.Option(
                  help="Only tables of at least this priority may use it.")] = None,
              allowed_databases: Annotated[str | None, typer.Option(help="Comma-separated; '' for any.")] = None,
              allowed_tables: Annotated[str | None, typer.Option(help="database.table, comma-separated; '' for any."
                                                                 )] = None,
              allowed_services: Annotated[str | None, typer.Option(
                  "--allowed-services", "--allowed-actions",
                  help="Table services, comma-separated; '' for any (--allowed-actions: its older name).")] = None,
              spark_conf: Annotated[list[str] | None, typer.Option(
                  "--spark-conf", help="key=value (repeatable); replaces the queue's extra Spark conf.")] = None,
              enabled: Annotated[bool | None, typer.Option("--enabled/--disabled", show_default=False)] = None,
              url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Create a queue, or change the given settings of an existing one."""
    given: dict[str, Any] = {
        "master": master, "kind": kind, "capacity": capacity, "executor_cores": executor_cores,
        "min_executor_memory_mb": min_executor_memory_mb, "max_executor_memory_mb": max_executor_memory_mb,
        "max_executors": max_executors, "reserved_for_priority": reserved_for_priority, "enabled": enabled,
        "spark_conf": key_values(spark_conf, "--spark-conf") if spark_conf else None}
    changes = {k: v for k, v in given.items() if v is not None}
    for key, value in (("allowed_databases", allowed_databases), ("allowed_tables", allowed_tables),
                       ("allowed_services", allowed_services)):
        if value is not None:
            changes[key] = _names(value)
    with connect(url, token) as client:
        existing = next((q for q in client.get("/queues") if q["name"] == name), None)
        body = {k: existing[k] for k in BODY_FIELDS} if existing else {}
        body.update(changes)
        if "kind" not in changes and "master" in changes and (existing is None or existing["kind"] == "local"):
            body["kind"] = _kind_of(changes["master"])
        queue = client.put(f"/queues/{name}", body)
    output_for(as_json).show(queue, f"queue {name} {'changed' if existing else 'created'}: {queue['master']}, "
                                    f"{queue['capacity']} job(s) at once")


@app.command("delete")
def delete_queue(name: Name, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Delete a queue."""
    with connect(url, token) as client:
        client.delete(f"/queues/{name}")
    output_for(as_json).show({"name": name, "deleted": True}, f"queue {name} deleted")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="queues")
