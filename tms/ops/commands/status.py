"""`tms status`: is the service up, and what is it doing."""
from __future__ import annotations

from typing import Any

import typer

from .. import output
from ..client import TmsClient
from ..names import TASK_STATES
from ..options import DEFAULT_URL, Json, Token, Url, connect
from ..output import output_for


def _count(client: TmsClient, path: str, **filters: Any) -> int:
    return int(client.get(path, **filters, limit=1)["total"])


def collect(client: TmsClient) -> dict[str, Any]:
    """The figures `tms status` shows."""
    ready = client.request("GET", "/readyz")
    tasks = {state: _count(client, "/tasks", state=state) for state in TASK_STATES}
    return {
        "url": client.url, "ready": ready,
        "tables": {"total": _count(client, "/tables"), "enabled": _count(client, "/tables", enabled=True)},
        "tasks": {state: n for state, n in tasks.items() if n},
        "queues": [{"name": q["name"], "running": q.get("running", 0), "capacity": q["capacity"],
                    "enabled": q["enabled"]} for q in client.get("/queues")],
        "open_alerts": _count(client, "/alerts", open_only=True),
        "instances": client.get("/instances"),
    }


def _lines(s: dict[str, Any]) -> list[str]:
    ready = s["ready"]
    lines = [output.record([
        ("service", f"{s['url']}: {ready.get('status')} (database {ready.get('database')}, "
                    f"migrations {ready.get('migrations')})"),
        ("tables", f"{s['tables']['total']} ({s['tables']['enabled']} enabled)"),
        ("tasks", ", ".join(f"{state} {n}" for state, n in s["tasks"].items()) or "none"),
        ("queues", ", ".join(f"{q['name']} {q['running']}/{q['capacity']}{'' if q['enabled'] else ' (disabled)'}"
                             for q in s["queues"]) or "none yet"),
        ("open alerts", s["open_alerts"]),
    ])]
    lines += ["", "instances:", output.table(s["instances"], [
        ("ID", output.field("id")), ("ROLES", output.field("roles")), ("HOST", output.field("host")),
        ("PID", output.field("pid")), ("VERSION", output.field("version")),
        ("STARTED", output.time_field("started_at")), ("HEARTBEAT", output.time_field("heartbeat_at"))],
        empty="none")]
    return lines


def status(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The service's readiness, tables, tasks by state, queue usage, open alerts and live instances."""
    with connect(url, token) as client:
        figures = collect(client)
    output_for(as_json).show(figures, lambda: "\n".join(_lines(figures)))


def register(root: typer.Typer) -> None:
    root.command("status")(status)
