"""`tms alerts list|ack`: what TMS raised for people to look at, and an operator's acknowledgement."""
from __future__ import annotations

from typing import Annotated

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect
from ..output import output_for
from .table_ref import table_id

app = typer.Typer(help="Alerts.", no_args_is_help=True)
COLUMNS = [("ID", output.field("id")), ("SEVERITY", output.field("severity")), ("KIND", output.field("kind")),
           ("TABLE", output.field("table_id")), ("TASK", output.field("task_id")),
           ("RAISED", output.time_field("created_at")), ("RESOLVED", output.time_field("resolved_at")),
           ("MESSAGE", output.field("message"))]


@app.command("list")
def list_alerts(table: Annotated[str | None, typer.Option("--table", help="Only this table's (id or name).")] = None,
                kind: Annotated[str | None, typer.Option(help="Only this kind, e.g. planning_failed.")] = None,
                severity: Annotated[str | None, typer.Option(help="info | warning | critical")] = None,
                open_only: Annotated[bool, typer.Option("--open", help="Only alerts not resolved.")] = False,
                limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
                offset: Annotated[int, typer.Option(min=0)] = 0,
                url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Alerts, newest first."""
    with connect(url, token) as client:
        page = client.get("/alerts", table_id=table_id(client, table) if table else None, kind=kind,
                          severity=severity, open_only=open_only or None, limit=limit, offset=offset)
    output_for(as_json).page(page, COLUMNS, empty="no alert")


@app.command("ack")
def acknowledge(alert_id: Annotated[int, typer.Argument(min=1, help="The alert's id.", show_default=False)],
                url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Acknowledge an instance_down alert: the process is gone for good; its row is forgotten and the alert
    resolves (other types resolve when their condition clears)."""
    with connect(url, token) as client:
        alert = client.post(f"/alerts/{alert_id}:acknowledge")
    output_for(as_json).show(alert, f"alert {alert_id} ({alert['kind']} {alert['subject']}) resolved")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="alerts")
