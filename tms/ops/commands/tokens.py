"""`tms tokens list|revoke` over the API, in the `tokens` group whose `create` writes to the database
directly (service/cli.py)."""
from __future__ import annotations

from typing import Annotated

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect
from ..output import output_for

COLUMNS = [("ID", output.field("id")), ("NAME", output.field("name")), ("ROLE", output.field("role")),
           ("CREATED", output.time_field("created_at")), ("EXPIRES", output.time_field("expires_at")),
           ("REVOKED", output.time_field("revoked_at"))]


def list_tokens(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """API tokens (never their secrets); needs an admin token."""
    with connect(url, token) as client:
        tokens = client.get("/tokens")
    output_for(as_json).rows(tokens, COLUMNS, empty="no token in the database")


def revoke_token(token_id: Annotated[int, typer.Argument(min=1, help="The token's id (tms tokens list).",
                                                         show_default=False)],
                 url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Revoke an API token: it stops working at once (within the services' cache time)."""
    with connect(url, token) as client:
        client.delete(f"/tokens/{token_id}")
    output_for(as_json).show({"id": token_id, "revoked": True}, f"token {token_id} revoked")


def register(tokens_app: typer.Typer) -> None:
    tokens_app.command("list")(list_tokens)
    tokens_app.command("revoke")(revoke_token)
