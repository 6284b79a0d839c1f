"""`tms templates list|show|set|delete`: policy templates, the rules by database, table-name pattern or path
prefix that give tables their policies, queue, priority and lock options."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect, key_values
from ..output import output_for

app = typer.Typer(help="Policy templates: the settings tables get by database, name pattern or path prefix.",
                  no_args_is_help=True)
Name = Annotated[str, typer.Argument(help="The template's name.", show_default=False)]


def _scope(t: dict[str, Any]) -> str:
    parts = [f"{label} {t[key]}" for key, label in (("database", "database"), ("name_pattern", "name"),
                                                    ("path_prefix", "under")) if t.get(key)]
    return ", ".join(parts) or "every table"


def _settings(t: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in sorted((t.get("policies") or {}).items())]
    parts += [f"{key}={t[key]}" for key in ("queue", "priority") if t.get(key) is not None]
    return ", ".join(parts) or "-"


COLUMNS = [("NAME", output.field("name")), ("SCOPE", _scope), ("TABLES", output.field("tables")),
           ("SETTINGS", _settings)]


@app.command("list")
def list_templates(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The policy templates, with the number of tables each applies to."""
    with connect(url, token) as client:
        templates = client.get("/policy-templates")
    output_for(as_json).rows(templates, COLUMNS, empty="no policy template: tables have their own settings or "
                                                       "the defaults")


@app.command("show")
def show_template(name: Name, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """One policy template."""
    with connect(url, token) as client:
        template = client.get(f"/policy-templates/{name}")
    output_for(as_json).show(template, lambda: output.record([
        ("name", template["name"]), ("scope", _scope(template)), ("tables", template["tables"]),
        ("queue", template.get("queue") or "-"), ("priority", template.get("priority")),
        *sorted((template.get("policies") or {}).items())]))


@app.command("set")
def set_template(name: Name,
                 database: Annotated[str | None, typer.Option(help="Tables of this database.")] = None,
                 name_pattern: Annotated[str | None, typer.Option(
                     "--name", help="Tables whose name (or database.name) matches this pattern (*, ?, [...]).")
                 ] = None,
                 path_prefix: Annotated[str | None, typer.Option(
                     "--under", help="Tables whose base path lies under this folder.")] = None,
                 policy: Annotated[list[str] | None, typer.Option(
                     "--policy", help="Hudi option=value (repeatable): a policy or lock option.")] = None,
                 queue: Annotated[str | None, typer.Option(help="The tables' resource queue.")] = None,
                 priority: Annotated[int | None, typer.Option(help="The tables' priority.")] = None,
                 url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Create or replace a template (every field at once) and apply it to the tables it matches."""
    body = {"database": database, "name_pattern": name_pattern, "path_prefix": path_prefix,
            "policies": key_values(policy, "--policy"), "queue": queue, "priority": priority}
    with connect(url, token) as client:
        template = client.put(f"/policy-templates/{name}", body)
    output_for(as_json).show(template, f"template {name} ({_scope(template)}): applies to {template['tables']} "
                                       f"table(s), changed {template['changed']}")


@app.command("delete")
def delete_template(name: Name, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Delete a template: its tables fall back to another template or the defaults."""
    with connect(url, token) as client:
        client.delete(f"/policy-templates/{name}")
    output_for(as_json).show({"name": name, "deleted": True}, f"template {name} deleted")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="templates")
