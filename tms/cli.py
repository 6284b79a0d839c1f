"""The `tms` command line."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import typer
import typer.rich_utils
from typer.core import TyperGroup

from manager import cli as manager_cli
from planner import cli as planner_cli
from service import cli as service_cli
from standalone import cli as standalone_cli
from standalone.demo import run_demo_writer
from tms.config import load_settings
from tms.errors import ONE_LINE_ERRORS, TMSError
from tms.execute import cli as execute_cli
from tms.execute import savepoint_cli, ttl_cli
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.init import create_metadata_table
from tms.hudi.records.reader import iter_snapshot
from tms.hudi.records.schema import avro_to_arrow
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.inspect import describe_table, format_description
from tms.hudi.table.write_options import parse_option_pairs, parse_write_options
from tms.hudi.table.writer import HudiWriter, create_table_for_records, records_schema
from tms.hudi.timeline.instant import is_valid_instant_time
from tms.instance import tms_version
from tms.ops import commands as ops_commands
from tms.ops.options import after_the_subcommand
from tms.planning.capabilities import capabilities
from tms.table_context import table_context
from worker import cli as worker_cli


class _Commands(TyperGroup):
    """The one error handler of every `tms` command (the roles' included): a TMSError is one line on stderr
    and exit status 1, never a traceback. The ops commands' global options (--json, --url, --token) may come
    before the subcommand: they are passed on to it."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, after_the_subcommand(args))

    def invoke(self, ctx: Any) -> Any:  # a context of the click Typer bundles (typer._click, private)
        try:
            return super().invoke(ctx)
        except ONE_LINE_ERRORS as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(cls=_Commands, help="TMS: a table management service for Apache Hudi tables. The ops "
                                       "commands' --json, --url and --token go before or after the subcommand "
                                       "(tms --json tasks list, tms tasks list --json).",
                  no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]},
                  pretty_exceptions_enable=False)
# Help printed into a pipe (`tms --help | less`) is this wide at least, rather than Rich's 80 columns.
PIPED_HELP_WIDTH = 100


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"tms {tms_version()}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                       help="Print the version of TMS and exit.")) -> None:
    pass


def help_width() -> int | None:
    """How wide help is printed: the terminal's (None: Rich asks it), TERMINAL_WIDTH or COLUMNS when set, and
    when output goes to a pipe, the width of the terminal `tms` runs in (stderr's) but at least
    PIPED_HELP_WIDTH."""
    if os.environ.get("TERMINAL_WIDTH") or os.environ.get("COLUMNS") or sys.stdout.isatty():
        return typer.rich_utils.MAX_WIDTH
    try:
        terminal = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        terminal = shutil.get_terminal_size().columns
    return max(PIPED_HELP_WIDTH, terminal)



def _json_default(v):
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    return str(v)


def _load(path: str) -> HudiTable:
    return HudiTable.load(path, context=table_context(load_settings()))


@app.command()
def inspect(path: str = typer.Argument(..., help="Base path (or URL) of a Hudi table."),
            as_json: bool = typer.Option(False, "--json", help="Print one JSON document.")):
    """Table config, timeline, file groups with their slices and sizes, pending plans, inflight instants."""
    table = _load(path)
    desc = describe_table(table, {service: (c.can_run, c.reason) for service, c in capabilities(table).items()})
    typer.echo(json.dumps(desc, indent=2, default=_json_default) if as_json else format_description(desc))


@app.command()
def read(path: str = typer.Argument(..., help="Base path of a Hudi table."),
         as_of: str | None = typer.Option(None, "--as-of", help="Time travel: the snapshot at this instant."),
         limit: int | None = typer.Option(None, "--limit", min=0, help="Print at most N rows.")):
    """The snapshot rows (base + logs merged) as JSON lines."""
    if as_of is not None and not is_valid_instant_time(as_of):
        raise TMSError(f"--as-of {as_of!r} is not an instant time (yyyyMMddHHmmssSSS)")
    printed = 0
    for part in iter_snapshot(_load(path), as_of=as_of):
        for row in part.to_pylist():
            if limit is not None and printed >= limit:
                return
            sys.stdout.write(json.dumps(row, default=_json_default) + "\n")
            printed += 1


def _read_records(path: Path) -> list[dict]:
    records = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise TMSError(f"{path}:{n}: not JSON: {e.msg}") from None
                if not isinstance(rec, dict):
                    raise TMSError(f"{path}:{n}: a record must be a JSON object")
                records.append(rec)
    except OSError as e:
        raise TMSError(f"cannot read {path}: {e.strerror}") from None
    if not records:
        raise TMSError(f"{path} holds no records")
    return records


def _fields(value: str | None) -> list[str]:
    return [f.strip() for f in (value or "").split(",") if f.strip()]


@app.command()
def write(path: str = typer.Argument(..., help="Base path of a Hudi table."),
          records: Path | None = typer.Option(None, "--records", help="JSON-lines file of records."),
          op: str = typer.Option("upsert", "--op", help="upsert | insert | delete"),
          create: bool = typer.Option(False, "--create", help="Create the table first (schema from the records)."),
          table_type: str = typer.Option("MERGE_ON_READ", "--table-type", help="MERGE_ON_READ | COPY_ON_WRITE"),
          table_version: int = typer.Option(8, "--table-version", help="6, 8 or 9"),
          metadata: str | None = typer.Option(None, "--metadata",
                                              help="With --create: metadata table partitions, e.g. "
                                                   "files,column_stats,record_index"),
          key: str | None = typer.Option(None, "--key", help="Record key field(s), comma-separated."),
          ordering: str | None = typer.Option(None, "--ordering", help="Ordering (precombine) field."),
          partition: str | None = typer.Option(None, "--partition", help="Partition field(s), comma-separated."),
          hive_style: bool = typer.Option(True, "--hive-style/--no-hive-style",
                                          help="Partition folders named field=value (hive style) or value."),
          urlencode: bool = typer.Option(False, "--urlencode", help="URL-encode partition values (Hive's escaping)."),
          partition_time_format: str | None = typer.Option(
              None, "--partition-time-format",
              help="Time-based key generator: the one partition field (epoch milliseconds) as a date pattern, "
                   "e.g. yyyy/MM/dd/HH (several folder levels)."),
          base_file_format: str = typer.Option("PARQUET", "--base-file-format", help="PARQUET | LANCE (version 9)"),
          leave_inflight: bool = typer.Option(False, "--leave-inflight",
                                              help="Write the files but do not complete the instant."),
          complete: str | None = typer.Option(None, "--complete", help="Complete a write left inflight."),
          log_blocks: str = typer.Option("avro", "--log-blocks", help="MOR log block format: avro | parquet"),
          callback_url: str | None = typer.Option(None, "--callback-url",
                                                     help="POST Hudi's commit callback here after the commit."),
          callback_key: str | None = typer.Option(None, "--callback-key", envvar="TMS_CALLBACK_KEY",
                                                 help="HUDI-CALLBACK-KEY header value."),
          evolve_schema: bool = typer.Option(
              False, "--evolve-schema", help="Let the records evolve the table's schema (columns added, types "
                                             "promoted as Hudi allows); other changes are refused."),
          option: list[str] | None = typer.Option(
              None, "--option", help="A Hudi write option key=value (repeatable): hoodie.write.lock.provider and "
                                     "hoodie.write.lock.*, hoodie.write.concurrency.mode, "
                                     "hoodie.clustering.updates.strategy, hoodie.parquet.small.file.limit (0, the "
                                     "default: each insert batch makes new file groups) and "
                                     "hoodie.parquet.max.file.size.")):
    """One commit from JSON-lines records; prints the instant."""
    opts: dict[str, Any] = dict(callback_url=callback_url, callback_key=callback_key, log_block_format=log_blocks)
    if metadata and not create:
        raise TMSError("--metadata goes with --create")
    table = None if create else _load(path)
    write_options = parse_write_options(parse_option_pairs(option or []), base_path=path,
                                        table_name=table.name if table else Path(path.rstrip("/")).name)
    if complete:
        if records or create or table is None:
            raise TMSError("--complete takes no --records or --create")
        with TransactionManager(table, write_options.concurrency) as transactions:
            result = HudiWriter(table, **opts, transactions=transactions,
                                allow_updates_to_clustering=write_options.allow_updates_to_clustering
                                ).complete(complete)
        typer.echo(result.instant)
        return
    if records is None:
        raise TMSError("--records FILE is required (or --complete INSTANT)")
    if op not in ("upsert", "insert", "delete"):
        raise TMSError(f"--op must be upsert, insert or delete, not {op!r}")
    rows = _read_records(records)
    if create:
        if not key:
            raise TMSError("--create needs --key")
        if table_type not in ("MERGE_ON_READ", "COPY_ON_WRITE"):
            raise TMSError(f"--table-type must be MERGE_ON_READ or COPY_ON_WRITE, not {table_type!r}")
        if table_version not in (6, 8, 9):
            raise TMSError(f"--table-version must be 6, 8 or 9, not {table_version}")
        table = create_table_for_records(path, rows, table_type=table_type, version=table_version,
                                         key=_fields(key), ordering=_fields(ordering),
                                         partition=_fields(partition), hive_style=hive_style,
                                         urlencode=urlencode, partition_time_format=partition_time_format,
                                         base_file_format=base_file_format,
                                         context=table_context(load_settings())).table
        if metadata:
            create_metadata_table(table, _fields(metadata))
            table = _load(path)  # its properties now list the metadata table's partitions
    if table is None:
        raise TMSError(f"no table at {path}")  # _load raised already; for the type checker
    with TransactionManager(table, write_options.concurrency) as transactions:
        writer = HudiWriter(table, **opts, transactions=transactions,
                            allow_updates_to_clustering=write_options.allow_updates_to_clustering,
                            file_sizing=write_options.file_sizing)
        schema = records_schema(avro_to_arrow(writer.data_avro_schema()), rows) if evolve_schema else None
        result = writer.write(rows, op, leave_inflight=leave_inflight, schema=schema)
    typer.echo(result.instant)


@app.command()
def verify(path: str = typer.Argument(..., help="Base path of a Hudi table."),
           as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
           orphan_safety_hours: float = typer.Option(
               24.0, "--orphan-safety-hours", min=0,
               help="Files no instant references older than this are reported as orphans.")):
    """Check the table's consistency (metadata table vs storage and footers, record index vs records, pending
    instants without a heartbeat, files no instant references, and which of them are orphans); exit 1 if
    anything differs."""
    from tms.hudi.table.verify import verify_table
    problems = verify_table(_load(path), orphan_safety_seconds=orphan_safety_hours * 3600)
    if as_json:
        typer.echo(json.dumps({"problems": [p.to_dict() for p in problems], "ok": not problems}, indent=2))
    else:
        for p in problems:
            typer.echo(p.line())
        typer.echo(f"{len(problems)} problem(s)" if problems else "ok: no differences")
    if problems:
        raise typer.Exit(1)


@app.command()
def demo(path: str = typer.Argument(..., help="Where to create (or continue) the demo table."),
         commits: int = typer.Option(0, "--commits", help="Stop after N commits (0: run until stopped)."),
         interval: float = typer.Option(5.0, "--interval", help="Seconds between commits."),
         table_type: str = typer.Option("MERGE_ON_READ", "--table-type"),
         table_version: int = typer.Option(8, "--table-version"),
         callback_url: str | None = typer.Option(None, "--callback-url"),
         callback_key: str | None = typer.Option(None, "--callback-key", envvar="TMS_CALLBACK_KEY")):
    """The demo writer: a trips table receiving inserts, updates and deletes."""
    run_demo_writer(path, commits=commits, interval=interval, table_type=table_type,
                    version=table_version, callback_url=callback_url, callback_key=callback_key,
                    echo=typer.echo)


def _mount_role_commands() -> None:
    """Commands that live with their roles: the service's (serve, tokens, db), the planner's (schedule,
    planner), the executor's (execute), the worker's (worker) and the manager's (manager); and the ops
    commands over the HTTP API (status, tables, tasks, queues, alerts, trigger, tokens list|revoke)."""
    service_cli.register(app)
    planner_cli.register(app)
    execute_cli.register(app)
    ttl_cli.register(app)
    savepoint_cli.register(app)
    worker_cli.register(app)
    manager_cli.register(app)
    standalone_cli.register(app)
    ops_commands.register(app, tokens_app=service_cli.tokens)


_mount_role_commands()


def main() -> None:
    typer.rich_utils.MAX_WIDTH = help_width()
    app()


if __name__ == "__main__":
    main()
