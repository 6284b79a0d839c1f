"""`tms tables list|show|register|update|enable|disable|delete`: the table registry."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tms import display
from tms.errors import TMSError
from tms.hudi.locks import is_concurrency_option

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, confirm, connect, key_values
from ..output import output_for
from .table_ref import table_id

app = typer.Typer(help="Registered tables (over the API).", no_args_is_help=True)
Ref = Annotated[str, typer.Argument(help="The table: its id, name or database.name.", show_default=False)]
Policies = Annotated[list[str] | None, typer.Option(
    "--policy", help="A policy option, hoodie.key=value (repeatable); hoodie.key= restores its default.")]
WriteOptions = Annotated[list[str] | None, typer.Option(
    "--option", help="The writers' concurrency control, hoodie.write.lock.provider=... and its hoodie.write.lock.* "
                     "options, hoodie.write.concurrency.mode (repeatable): TMS plans and completes under that lock; "
                     "hoodie.key= removes one.")]

COLUMNS = [("ID", output.field("id")), ("DATABASE", output.field("database")), ("NAME", output.field("name")),
           ("TYPE", output.field("table_type")), ("VERSION", output.field("table_version")),
           ("ENABLED", output.field("enabled")), ("PRIORITY", output.field("priority")),
           ("QUEUE", output.field("queue")), ("BASE PATH", output.field("base_path"))]


def _show(table: dict[str, Any], as_json: bool, line: str) -> None:
    output_for(as_json).show(table, lambda: "\n".join([line, *_capability_lines(table), *_writer_lines(table)]))


def _capability_lines(t: dict[str, Any]) -> list[str]:
    """What TMS runs on the table: a line per service (runs, or refused and why; run on request only and why)."""
    return [f"  {service}: {'runs' if c['can_run'] else 'refused because ' + c['reason']}"
            + (f", on request only: {c['not_scheduled_reason']}" if c["can_run"] and c.get("scheduled") is False
               else "")
            for service, c in (t.get("capabilities") or {}).items()]


def _writer_lines(t: dict[str, Any]) -> list[str]:
    """The Hudi writer options that send the table's commits to TMS as they complete, one per line."""
    options = t.get("writer_options")
    if not options:
        return []
    return ["", "writers' options (each commit reaches TMS as it completes; without them, only by the planner's "
                "periodic pass):", *(f"  {key}={value}" for key, value in options.items())]


@app.command("list")
def list_tables(name: Annotated[str | None, typer.Option(help="Substring of the table name.")] = None,
                database: Annotated[str | None, typer.Option(help="The database (exact).")] = None,
                enabled: Annotated[bool | None, typer.Option("--enabled/--disabled", show_default=False,
                                                             help="Only enabled (or disabled) tables.")] = None,
                limit: Annotated[int, typer.Option(min=1, max=500)] = 100,
                offset: Annotated[int, typer.Option(min=0)] = 0,
                url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """List registered tables."""
    with connect(url, token) as client:
        page = client.get("/tables", name=name, database=database, enabled=enabled, limit=limit, offset=offset)
    output_for(as_json).page(page, COLUMNS, empty="no table")


def _instant_text(instant: dict[str, Any]) -> str:
    """`commit 2026-11-28 16:22:38 UTC (3m 05s ago), instant 20261128162238942`."""
    when = display.moment_and_age(instant["time"]) if instant.get("time") else instant["instant"]
    return f"{instant['action']} {when}" + (f", instant {instant['instant']}" if instant.get("time") else "")


def _detail_lines(t: dict[str, Any], all_policies: bool = False) -> list[str]:
    health = t.get("health") or {}
    timeline = t.get("timeline") or {}
    groups = t.get("file_group_stats") or {}
    last = timeline.get("last_completed")
    lines = [output.record([
        ("table", f"{t['id']} {t['database']}.{t['name']}"), ("base path", t["base_path"]),
        ("type", f"{t['table_type']} v{t['table_version']}"), ("enabled", t["enabled"]),
        ("priority", t["priority"]), ("queue", t["queue"]), ("record key", t["record_key_fields"]),
        ("partitions", t["partition_fields"]), ("ordering", t["ordering_fields"]),
        ("health", f"{health.get('status', '-')} {'; '.join(health.get('reasons') or [])}".strip()),
        ("timeline", f"{timeline.get('instants', 0)} instants, {timeline.get('pending', 0)} pending"),
        ("last completed", _instant_text(last) if last else "none"),
        ("file groups", f"{groups.get('file_groups', 0)} in {groups.get('partitions', 0)} partition(s), "
                        f"{display.size(groups.get('base_bytes'))} of base files, {groups.get('log_files', 0)} log "
                        f"file(s) of {display.size(groups.get('log_bytes'))}, the largest file group "
                        f"{display.size(groups.get('largest_file_group_bytes'))}"),
        ("tasks", t.get("tasks_by_state") or {}),
    ])]
    if t.get("capabilities"):
        lines += ["", "what TMS runs:", *_capability_lines(t)]
    lines += _writer_lines(t)
    if "last_event_at" in t:
        lines.append(f"  last event from its writers: {t['last_event_at']}" if t["last_event_at"] else
                     "  no event from its writers yet: its commits reach TMS only by the planner's periodic pass")
    pending = t.get("pending_instants") or []
    if pending:
        lines += ["", "pending instants:", output.table(pending, [
            ("INSTANT", output.field("instant")), ("ACTION", output.field("action")),
            ("STATE", output.field("state")), ("TIME", lambda i: display.moment_and_age(i.get("time")))])]
    ttl = t.get("ttl")
    if ttl:
        expired = ttl["expired_partitions"]
        more = ttl["expired_partitions_total"] - len(expired)
        lines += ["", "ttl:", output.record([
            ("records expire before", output.when(ttl["record_ttl_cutoff"]) if ttl["record_ttl_cutoff"]
             else "no record TTL"),
            ("last record TTL", ttl["last_record_ttl"] or "none yet"),
            ("last partition delete", ttl["last_partition_delete"] or "none yet"),
            ("expired partitions", ", ".join(expired) + (f" and {more} more" if more > 0 else "") or "none"),
            *((f"{s['service']} task", _ttl_task_line(s)) for s in ttl.get("schedule") or ()),
        ])]
    policies = t.get("policies") or {}
    sources = t.get("sources") or {}

    def sourced(key: str) -> Any:  # a value set by the table or a template says which
        value, source = display.policy_value(key, policies[key]), sources.get(key, "default")
        return value if source == "default" else f"{output.text(value)} ({source})"
    lock = sorted((k, sourced(k)) for k in policies if is_concurrency_option(k))
    set_here = {k for k in policies if sources.get(k, "default") != "default"}
    own = sorted((k, sourced(k)) for k in policies if not is_concurrency_option(k) and k in set_here)
    defaults = sorted((k, sourced(k)) for k in policies if not is_concurrency_option(k) and k not in set_here)
    if t.get("template"):
        lines += ["", f"policy template: {t['template']}"]
    lines += ["", "policies set for this table or by its template:", output.record(own) if own else "none"]
    if all_policies:
        lines += ["", "defaults:", output.record(defaults)]
    elif defaults:
        lines += [f"and {len(defaults)} default(s), not shown (--all shows them)"]
    lines += ["", "concurrency control:", output.record(lock) if lock else "single writer (no lock)"]
    return lines


def _ttl_task_line(s: dict[str, Any]) -> str:
    last = f"task {s['last_task_id']} {s['last_state']}" if s.get("last_task_id") else "none yet"
    due = output.when(s["next_due"]) if s.get("next_due") else "at the next look"
    return f"every {s['interval_hours']} h; last: {last}; next: {due}"


def _policy_changes(policy: list[str] | None, option: list[str] | None, *, empty_is_none: bool) -> dict[str, Any]:
    """The body's `policies`: TMS's policy options and the table's concurrency-control options."""
    write_options = key_values(option, "--option", empty_is_none=empty_is_none)
    others = sorted(k for k in write_options if not is_concurrency_option(k))
    if others:
        raise TMSError(f"--option {others[0]} is not a concurrency-control option (hoodie.write.lock.*, "
                       "hoodie.write.concurrency.mode); give policies with --policy")
    return {**key_values(policy, "--policy", empty_is_none=empty_is_none), **write_options}


@app.command("show")
def show_table(ref: Ref,
               all_policies: Annotated[bool, typer.Option("--all", help="Also the policies left at their defaults "
                                                                        "(--json always has them all).")] = False,
               url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """A table: configuration, health, timeline, file groups, tasks and its policies (those set for it first;
    with --all every policy's effective value)."""
    with connect(url, token) as client:
        detail = client.get(f"/tables/{table_id(client, ref)}")
    output_for(as_json).show(detail, lambda: "\n".join(_detail_lines(detail, all_policies)))


def _absolute(path: str) -> str:
    """A local path as the service must see it (absolute); URLs as given."""
    return path if "://" in path else str(Path(path).expanduser().absolute())


@app.command("register")
def register_table(path: Annotated[str, typer.Argument(help="The table's base path or URL.", show_default=False)],
                   priority: Annotated[int | None, typer.Option(
                       help="Higher runs first (default: its policy template's, else 0).")] = None,
                   queue: Annotated[str | None, typer.Option(help="Preferred resource queue.")] = None,
                   policy: Policies = None, option: WriteOptions = None,
                   callback_key: Annotated[str | None, typer.Option(
                       help="A HUDI-CALLBACK-KEY accepted for this table only.")] = None,
                   disabled: Annotated[bool, typer.Option("--disabled", help="Register it disabled.")] = False,
                   url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Register a Hudi table (its files are not touched)."""
    body: dict[str, Any] = {"base_path": _absolute(path), "enabled": not disabled,
                            "policies": _policy_changes(policy, option, empty_is_none=False)}
    if priority is not None:
        body["priority"] = priority
    if queue is not None:
        body["queue"] = queue
    if callback_key is not None:
        body["callback_key"] = callback_key
    with connect(url, token) as client:
        table = client.post("/tables", body)
    _show(table, as_json, f"registered {table['base_path']} as table {table['id']} "
                          f"({table['database']}.{table['name']}, {table['table_type']} v{table['table_version']})")


@app.command("update")
def update_table(ref: Ref, policy: Policies = None, option: WriteOptions = None,
                 priority: Annotated[int | None, typer.Option(help="Higher runs first.")] = None,
                 queue: Annotated[str | None, typer.Option(help="Preferred resource queue ('' for none).")] = None,
                 callback_key: Annotated[str | None, typer.Option(
                     help="The table's own callback key ('' removes it).")] = None,
                 url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Change a table's policies, concurrency control (its writers' lock), priority, queue or callback key."""
    changes: dict[str, Any] = {}
    if policy or option:
        changes["policies"] = _policy_changes(policy, option, empty_is_none=True)
    if priority is not None:
        changes["priority"] = priority
    if queue is not None:
        changes["queue"] = queue or None
    if callback_key is not None:
        changes["callback_key"] = callback_key or None
    if not changes:
        raise TMSError("nothing to change: give --policy, --option, --priority, --queue or --callback-key")
    with connect(url, token) as client:
        table = client.patch(f"/tables/{table_id(client, ref)}", changes)
    line = f"table {table['id']} ({table['name']}) updated"
    for key in (changes.get("policies") or {}):
        line += f"\n  {key} = {output.text(display.policy_value(key, table['policies'].get(key)))}"
    _show(table, as_json, line)


def _set_enabled(ref: str, enabled: bool, url: str, token: str | None, as_json: bool) -> None:
    with connect(url, token) as client:
        table = client.patch(f"/tables/{table_id(client, ref)}", {"enabled": enabled})
    _show(table, as_json, f"table {table['id']} ({table['name']}) {'enabled' if enabled else 'disabled'}")


@app.command("enable")
def enable_table(ref: Ref, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Plan and run the table's services again."""
    _set_enabled(ref, True, url, token, as_json)


@app.command("disable")
def disable_table(ref: Ref, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Stop planning the table's services (running tasks finish)."""
    _set_enabled(ref, False, url, token, as_json)


@app.command("delete")
def delete_table(ref: Ref, yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
                 url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Unregister a table and forget its tasks (its files are never touched)."""
    with connect(url, token) as client:
        tid = table_id(client, ref)
        if not yes:
            confirm(f"unregister table {tid} and forget its tasks?", f"table {tid} not unregistered")
        client.delete(f"/tables/{tid}")
    output_for(as_json).show({"id": tid, "deleted": True}, f"table {tid} unregistered (its files are untouched)")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tables")
