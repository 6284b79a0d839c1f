"""`tms trigger TABLE --service S`: plan a table service now."""
from __future__ import annotations

from typing import Annotated

import typer

from tms.table_service import TableService

from ..names import PLANNED_SERVICES as SERVICES
from ..options import DEFAULT_URL, Json, Token, Url, connect, one_of
from ..output import output_for
from .table_ref import table_id


def trigger(table: Annotated[str, typer.Argument(help="The table: id, name or database.name.", show_default=False)],
            service: Annotated[str, typer.Option("--service", help=f"{' | '.join(SERVICES)}")
                               ] = TableService.COMPACTION,
            url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Plan a table service on a table now, whatever its trigger says; the worker runs the task."""
    checked = one_of(service, SERVICES, "--service")
    with connect(url, token) as client:
        tid = table_id(client, table)
        result = client.post(f"/tables/{tid}:plan", {"service": checked})
    lines = [f"planned {task['service']} {task['instant']} on table {tid}: task {task['id']}, {task['state']}"
             for task in result["tasks"]]
    output_for(as_json).show(result, "\n".join(lines) or f"nothing to plan: table {tid} needs no {checked} now")


def register(root: typer.Typer) -> None:
    root.command("trigger")(trigger)
