"""`tms mutes list|add|delete`: alert mutes (blacklists) by table, database, owner or queue."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect
from ..output import output_for
from .table_ref import table_id

app = typer.Typer(help="Alert mutes: muted alerts are recorded, not delivered.", no_args_is_help=True)
COLUMNS = [("ID", output.field("id")), ("TABLE", output.field("table_id")), ("DATABASE", output.field("database")),
           ("OWNER", output.field("owner")), ("QUEUE", output.field("queue")),
           ("TYPES", lambda m: ",".join(m["alert_types"]) or "all"), ("REASON", output.field("reason")),
           ("EXPIRES", output.time_field("expires_at"))]


def _types(value: str | None) -> list[str]:
    return [t.strip() for t in (value or "").split(",") if t.strip()]


@app.command("list")
def list_mutes(include_expired: Annotated[bool, typer.Option("--expired", help="Also expired mutes.")] = False,
               url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The mutes in force."""
    with connect(url, token) as client:
        mutes = client.get("/mutes", include_expired=include_expired or None)
    output_for(as_json).rows(mutes, COLUMNS, empty="no mute")


@app.command("add")
def add_mute(table: Annotated[str | None, typer.Option("--table", help="A table (id or name).")] = None,
             database: Annotated[str | None, typer.Option(help="Every table of this database.")] = None,
             owner: Annotated[str | None, typer.Option(help="Every table of this owner.")] = None,
             queue: Annotated[str | None, typer.Option(help="This resource queue.")] = None,
             types: Annotated[str | None, typer.Option("--types", help="Alert types, comma-separated (none: all).")]
             = None,
             reason: Annotated[str, typer.Option(help="Why, for the people who read the alerts.")] = "",
             expires_at: Annotated[str | None, typer.Option("--expires-at",
                                                            help="ISO time with a zone (none: until deleted).")]
             = None,
             url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Mute alerts: every field given must match."""
    body: dict[str, Any] = {"database": database, "owner": owner, "queue": queue, "alert_types": _types(types),
                            "reason": reason, "expires_at": expires_at}
    with connect(url, token) as client:
        if table:
            body["table_id"] = table_id(client, table)
        mute = client.post("/mutes", {k: v for k, v in body.items() if v is not None})
    output_for(as_json).show(mute, f"mute {mute['id']} added")


@app.command("delete")
def delete_mute(mute_id: Annotated[int, typer.Argument(help="The mute's id.")],
                url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Delete a mute: its alerts are delivered again."""
    with connect(url, token) as client:
        client.delete(f"/mutes/{mute_id}")
    output_for(as_json).show({"id": mute_id, "deleted": True}, f"mute {mute_id} deleted")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="mutes")
