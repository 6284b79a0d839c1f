"""`tms engines list|show|set|delete` and `tms engines rollouts|rollout|rollout-delete`: the engines tasks run
on (a Spark and a job code version) and the rollout rules choosing them, with a canary share."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import output
from ..options import DEFAULT_URL, Json, Token, Url, connect, key_values
from ..output import output_for

app = typer.Typer(help="Engines (Spark + job code version) and rollout rules with canaries.", no_args_is_help=True)
Name = Annotated[str, typer.Argument(help="The engine's name.", show_default=False)]
RuleName = Annotated[str, typer.Argument(help="The rollout rule's name.", show_default=False)]


def _rate(results: dict[str, Any] | None) -> str:
    if not results or results.get("success_rate") is None:
        return "-"
    return f"{results['success_rate']:.0%} of {results['finished']}"


def _p50(results: dict[str, Any] | None) -> str:
    return f"{results['p50_seconds']:.1f} s" if results and results.get("p50_seconds") is not None else "-"


ENGINE_COLUMNS = [("NAME", output.field("name")), ("CODE", output.field("code_version")),
                  ("PYSPARK", lambda e: e.get("pyspark_version") or "-"),
                  ("SPARK-SUBMIT", lambda e: e.get("spark_submit") or e.get("spark_home") or "(worker's)"),
                  ("SUCCESS (1 DAY)", lambda e: _rate(e.get("results"))),
                  ("P50", lambda e: _p50(e.get("results")))]


def _scope(rule: dict[str, Any]) -> str:
    parts = [f"{key} {rule[key]}" for key in ("queue", "database", "table") if rule.get(key)]
    return ", ".join(parts) or "every task"


def _canary(rule: dict[str, Any]) -> str:
    if not rule.get("canary_engine"):
        return "-"
    if rule.get("shadow"):
        shadowed = rule.get("shadow_results") or {}
        return f"{rule['canary_engine']} {rule['canary_percent']}% in shadow (differed " \
               f"{shadowed.get('differed', 0)}, failed {shadowed.get('failed', 0)}/{shadowed.get('finished', 0)})"
    results = (rule.get("results") or {}).get(rule["canary_engine"])
    return f"{rule['canary_engine']} {rule['canary_percent']}% (failed {results['failed'] if results else 0}" \
           f"/{results['finished'] if results else 0})"


ROLLOUT_COLUMNS = [("NAME", output.field("name")), ("SCOPE", _scope), ("STABLE", output.field("stable_engine")),
                   ("CANARY", _canary), ("STATE", output.field("state")),
                   ("REASON", lambda r: r.get("rollback_reason") or "-")]


@app.command("list")
def list_engines(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The engines, with their success rate and median duration of the last day."""
    with connect(url, token) as client:
        engines = client.get("/engines")
    output_for(as_json).rows(engines, ENGINE_COLUMNS, empty="no engine: tasks run the worker's own job code")


@app.command("show")
def show_engine(name: Name, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """One engine."""
    with connect(url, token) as client:
        engine = client.get(f"/engines/{name}")
    output_for(as_json).show(engine, lambda: _engine_text(engine))


def _engine_text(engine: dict[str, Any]) -> str:
    results = engine.get("results") or {}
    return output.record([
        ("name", engine["name"]), ("code version", engine["code_version"]), ("code", engine["code_path"]),
        ("spark-submit", engine.get("spark_submit") or engine.get("spark_home") or "(the worker's)"),
        ("pyspark", engine.get("pyspark_version") or "-"),
        ("spark conf", ", ".join(f"{k}={v}" for k, v in engine["spark_conf"].items()) or "-"),
        ("success (1 day)", _rate(results)), ("p50 / p95", f"{_p50(results)} / " + (
            f"{results['p95_seconds']:.1f} s" if results.get("p95_seconds") is not None else "-"))])


@app.command("set")
def set_engine(name: Name,
               code_version: Annotated[str, typer.Option(help="The job code's version.")],
               code_path: Annotated[str | None, typer.Option(
                   help="Folder or zip with that version's jobs package (default: TMS_ENGINE_CODE_DIR/<version>)."
               )] = None,
               spark_home: Annotated[str | None, typer.Option(help="A Spark distribution.")] = None,
               spark_submit: Annotated[str | None, typer.Option(help="A spark-submit (over --spark-home's).")] = None,
               pyspark_version: Annotated[str | None, typer.Option()] = None,
               spark_conf: Annotated[list[str] | None, typer.Option(
                   "--spark-conf", help="key=value (repeatable): extra Spark confs.")] = None,
               kind: Annotated[str, typer.Option(
                   help="tms (TMS's job code) or hudi (Hudi's procedures execute TMS's plans; give Hudi's bundle "
                        "with --spark-conf spark.jars=...).")] = "tms",
               url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Register an engine, or replace one."""
    body = {"code_version": code_version, "code_path": code_path, "spark_home": spark_home,
            "spark_submit": spark_submit, "pyspark_version": pyspark_version,
            "spark_conf": key_values(spark_conf, "--spark-conf"), "kind": kind}
    with connect(url, token) as client:
        engine = client.put(f"/engines/{name}", body)
    output_for(as_json).show(engine, f"engine {name}: code {engine['code_version']} at {engine['code_path']}")


@app.command("delete")
def delete_engine(name: Name, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Delete an engine no rollout rule uses."""
    with connect(url, token) as client:
        client.delete(f"/engines/{name}")
    output_for(as_json).show({"name": name, "deleted": True}, f"engine {name} deleted")


@app.command("rollouts")
def list_rollouts(url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The rollout rules, with their canaries' results and state."""
    with connect(url, token) as client:
        rules = client.get("/rollouts")
    output_for(as_json).rows(rules, ROLLOUT_COLUMNS, empty="no rollout rule: tasks run the worker's own job code")


@app.command("rollout")
def set_rollout(name: RuleName,
                stable: Annotated[str, typer.Option(help="The engine most tasks run on.")],
                canary: Annotated[str | None, typer.Option(help="The engine a share of the tasks runs on.")] = None,
                percent: Annotated[int, typer.Option(help="The canary's share of the tasks, 0-100.")] = 0,
                queue: Annotated[str | None, typer.Option(help="Only tasks run on this queue.")] = None,
                database: Annotated[str | None, typer.Option(help="Only tables of this database.")] = None,
                table: Annotated[str | None, typer.Option(help="Only this table (database.table).")] = None,
                failure_margin: Annotated[float | None, typer.Option(
                    help="Roll back when the canary fails this much more often than stable (0-1).")] = None,
                min_tasks: Annotated[int | None, typer.Option(help="Canary attempts before judging.")] = None,
                shadow: Annotated[bool, typer.Option(
                    "--shadow", help="Run the canary in shadow on scratch copies; only stable's result is "
                                     "committed, and a differing result rolls the rule back.")] = False,
                url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Create or replace a rollout rule (putting a rolled-back rule again starts its canary afresh)."""
    body = {"stable_engine": stable, "canary_engine": canary, "canary_percent": percent, "queue": queue,
            "database": database, "table": table, "failure_margin": failure_margin, "min_tasks": min_tasks,
            "shadow": shadow}
    with connect(url, token) as client:
        rule = client.put(f"/rollouts/{name}", body)
    canary_part = f", {rule['canary_percent']}% on {rule['canary_engine']}" if rule["canary_engine"] else ""
    canary_part += " in shadow" if rule.get("shadow") else ""
    output_for(as_json).show(rule, f"rollout {name} ({_scope(rule)}): {rule['stable_engine']}{canary_part}")


@app.command("rollout-delete")
def delete_rollout(name: RuleName, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Delete a rollout rule: its tasks run the worker's own job code (or a broader rule's engine)."""
    with connect(url, token) as client:
        client.delete(f"/rollouts/{name}")
    output_for(as_json).show({"name": name, "deleted": True}, f"rollout {name} deleted")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="engines")
