"""`tms webhooks list|add|update|delete|deliveries`: where alerts are sent (firing and resolved)."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect
from ..output import output_for

app = typer.Typer(help="Webhooks that receive alerts.", no_args_is_help=True)
COLUMNS = [("ID", output.field("id")), ("NAME", output.field("name")), ("URL", output.field("url")),
           ("TYPES", lambda h: ",".join(h["alert_types"]) or "all"), ("MIN SEVERITY", output.field("min_severity")),
           ("FORMAT", output.field("format")), ("SIGNED", output.field("has_secret")),
           ("ENABLED", output.field("enabled"))]
DELIVERY_COLUMNS = [("ID", output.field("id")), ("ALERT", output.field("alert_id")), ("EVENT", output.field("event")),
                    ("STATE", output.field("state")), ("ATTEMPTS", output.field("attempts")),
                    ("NEXT", output.time_field("next_attempt_at")),
                    ("DELIVERED", output.time_field("delivered_at"))]
Types = Annotated[str | None, typer.Option("--types", help="Alert types, comma-separated (empty: all).")]
Severity = Annotated[str | None, typer.Option("--min-severity", help="info | warning | critical")]
Format = Annotated[str | None, typer.Option("--format", help="json | slack")]
Secret = Annotated[str | None, typer.Option("--secret", help="HMAC key of X-TMS-Signature (8+ characters).")]
Name = Annotated[str | None, typer.Option("--name", help="A name for people.")]


def _fields(types: str | None, min_severity: str | None, fmt: str | None, secret: str | None,
            name: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"min_severity": min_severity, "format": fmt, "secret": secret, "name": name}
    if types is not None:
        body["alert_types"] = [t.strip() for t in types.split(",") if t.strip()]
    return {k: v for k, v in body.items() if v is not None}


@app.command("list")
def list_webhooks(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The webhooks (their secrets are never shown)."""
    with connect(url, token) as client:
        hooks = client.get("/webhooks")
    output_for(as_json).rows(hooks, COLUMNS, empty="no webhook")


@app.command("add")
def add_webhook(target: Annotated[str, typer.Argument(help="The URL alerts are POSTed to.")],
                types: Types = None, min_severity: Severity = None, fmt: Format = None, secret: Secret = None,
                name: Name = None, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Send alerts to a URL."""
    with connect(url, token) as client:
        hook = client.post("/webhooks", {"url": target, **_fields(types, min_severity, fmt, secret, name)})
    output_for(as_json).show(hook, f"webhook {hook['id']} added")


@app.command("update")
def update_webhook(webhook_id: Annotated[int, typer.Argument(help="The webhook's id.")],
                   target: Annotated[str | None, typer.Option("--target", help="A new URL for the alerts.")] = None,
                   types: Types = None, min_severity: Severity = None, fmt: Format = None, secret: Secret = None,
                   name: Name = None,
                   enabled: Annotated[bool | None, typer.Option("--enable/--disable", help="Send or pause.")] = None,
                   url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Change what is given."""
    body = _fields(types, min_severity, fmt, secret, name)
    if target is not None:
        body["url"] = target
    if enabled is not None:
        body["enabled"] = enabled
    with connect(url, token) as client:
        hook = client.patch(f"/webhooks/{webhook_id}", body)
    output_for(as_json).show(hook, f"webhook {webhook_id} updated")


@app.command("delete")
def delete_webhook(webhook_id: Annotated[int, typer.Argument(help="The webhook's id.")],
                   url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Delete a webhook and its deliveries."""
    with connect(url, token) as client:
        client.delete(f"/webhooks/{webhook_id}")
    output_for(as_json).show({"id": webhook_id, "deleted": True}, f"webhook {webhook_id} deleted")


@app.command("deliveries")
def list_deliveries(webhook_id: Annotated[int, typer.Argument(help="The webhook's id.")],
                    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
                    offset: Annotated[int, typer.Option(min=0)] = 0,
                    url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """A webhook's deliveries with their attempts, newest first."""
    with connect(url, token) as client:
        page = client.get(f"/webhooks/{webhook_id}/deliveries", limit=limit, offset=offset)
    output_for(as_json).page(page, DELIVERY_COLUMNS, empty="no delivery")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="webhooks")
