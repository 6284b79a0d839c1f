"""`tms backfill start|end`: announce a backfill (a savepoint of the latest completed write first) and end it
(the savepoint deleted), over the API."""
from __future__ import annotations

from typing import Annotated

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect
from .table_ref import table_id

app = typer.Typer(help="A backfill of a table: savepoint it first, release the savepoint once done.",
                  no_args_is_help=True)
Ref = Annotated[str, typer.Argument(help="The table: its id, name or database.name.", show_default=False)]


@app.command("start")
def start(ref: Ref, reason: Annotated[str, typer.Option(help="What the backfill is (the savepoint's comment).")] = "",
          url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Savepoint the table's latest completed write before a backfill (operator)."""
    with connect(url, token) as client:
        made = client.post(f"/tables/{table_id(client, ref)}/backfills", {"reason": reason})
    if as_json:
        output.print_json(made)
        return
    savepoint = made["savepoint"]
    how = "savepointed" if made["created"] else f"already savepointed (by {savepoint['savepointed_by']})"
    typer.echo(f"table {made['table_id']}: {savepoint['instant']} {how}; restore to it with `tms backups restore` or "
               f"POST .../restore; end the backfill with `tms backfill end {ref} {savepoint['instant']}`")


@app.command("end")
def end(ref: Ref, instant: Annotated[str, typer.Argument(help="The backfill's savepoint (its instant).")],
        url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """End a backfill: delete the savepoint its start made (operator)."""
    with connect(url, token) as client:
        tid = table_id(client, ref)
        client.delete(f"/tables/{tid}/backfills/{instant}")
    output.output_for(as_json).show({"table_id": tid, "instant": instant, "deleted": True},
                                    f"table {tid}: backfill savepoint {instant} deleted")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="backfill")
