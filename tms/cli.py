"""The `tms` command line."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sys
from pathlib import Path
from typing import Optional

import typer

from tms.hudi.errors import HudiError

app = typer.Typer(help="TMS: a table management service for Apache Hudi tables.", no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]}, pretty_exceptions_enable=False)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _json_default(v):
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    return str(v)


def _load(path: str):
    from tms.hudi.table import HudiTable
    return HudiTable.load(path)


@app.command()
def inspect(path: str = typer.Argument(..., help="Base path (or URL) of a Hudi table."),
            as_json: bool = typer.Option(False, "--json", help="Print one JSON document.")):
    """Table config, timeline, file groups with their slices and sizes, pending plans, inflight instants."""
    from tms.hudi.inspect import describe_table, format_description
    try:
        desc = describe_table(_load(path))
    except HudiError as e:
        _fail(str(e))
    typer.echo(json.dumps(desc, indent=2, default=_json_default) if as_json else format_description(desc))


@app.command()
def read(path: str = typer.Argument(..., help="Base path of a Hudi table."),
         as_of: Optional[str] = typer.Option(None, "--as-of", help="Time travel: the snapshot at this instant."),
         limit: Optional[int] = typer.Option(None, "--limit", min=0, help="Print at most N rows.")):
    """The snapshot rows (base + logs merged) as JSON lines."""
    from tms.hudi.instant import is_valid_instant_time
    from tms.hudi.reader import iter_snapshot
    if as_of is not None and not is_valid_instant_time(as_of):
        _fail(f"--as-of {as_of!r} is not an instant time (yyyyMMddHHmmssSSS)")
    printed = 0
    try:
        for part in iter_snapshot(_load(path), as_of=as_of):
            for row in part.to_pylist():
                if limit is not None and printed >= limit:
                    return
                sys.stdout.write(json.dumps(row, default=_json_default) + "\n")
                printed += 1
    except HudiError as e:
        _fail(str(e))


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
                    _fail(f"{path}:{n}: not JSON: {e.msg}")
                if not isinstance(rec, dict):
                    _fail(f"{path}:{n}: a record must be a JSON object")
                records.append(rec)
    except OSError as e:
        _fail(f"cannot read {path}: {e.strerror}")
    if not records:
        _fail(f"{path} holds no records")
    return records


def _fields(value: Optional[str]) -> list[str]:
    return [f.strip() for f in (value or "").split(",") if f.strip()]


@app.command()
def write(path: str = typer.Argument(..., help="Base path of a Hudi table."),
          records: Optional[Path] = typer.Option(None, "--records", help="JSON-lines file of records."),
          op: str = typer.Option("upsert", "--op", help="upsert | insert | delete"),
          create: bool = typer.Option(False, "--create", help="Create the table first (schema from the records)."),
          table_type: str = typer.Option("MERGE_ON_READ", "--table-type", help="MERGE_ON_READ | COPY_ON_WRITE"),
          table_version: int = typer.Option(8, "--table-version", help="6, 8 or 9"),
          key: Optional[str] = typer.Option(None, "--key", help="Record key field(s), comma-separated."),
          ordering: Optional[str] = typer.Option(None, "--ordering", help="Ordering (precombine) field."),
          partition: Optional[str] = typer.Option(None, "--partition", help="Partition field(s), comma-separated."),
          hive_style: bool = typer.Option(True, "--hive-style/--no-hive-style",
                                          help="Partition folders named field=value (hive style) or value."),
          urlencode: bool = typer.Option(False, "--urlencode", help="URL-encode partition values (Hive's escaping)."),
          partition_time_format: Optional[str] = typer.Option(
              None, "--partition-time-format",
              help="Time-based key generator: the one partition field (epoch milliseconds) as a date pattern, "
                   "e.g. yyyy/MM/dd/HH (several folder levels)."),
          base_file_format: str = typer.Option("PARQUET", "--base-file-format", help="PARQUET | LANCE (version 9)"),
          leave_inflight: bool = typer.Option(False, "--leave-inflight",
                                              help="Write the files but do not complete the instant."),
          complete: Optional[str] = typer.Option(None, "--complete", help="Complete a write left inflight."),
          log_blocks: str = typer.Option("avro", "--log-blocks", help="MOR log block format: avro | parquet"),
          callback_url: Optional[str] = typer.Option(None, "--callback-url",
                                                     help="POST Hudi's commit callback here after the commit."),
          callback_key: Optional[str] = typer.Option(None, "--callback-key", envvar="TMS_CALLBACK_KEY",
                                                     help="HUDI-CALLBACK-KEY header value.")):
    """One commit from JSON-lines records; prints the instant."""
    from tms.hudi.writer import HudiWriter, create_table_for_records
    opts = dict(callback_url=callback_url, callback_key=callback_key, log_block_format=log_blocks)
    try:
        if complete:
            if records or create:
                _fail("--complete takes no --records or --create")
            result = HudiWriter(_load(path), **opts).complete(complete)
            typer.echo(result.instant)
            return
        if records is None:
            _fail("--records FILE is required (or --complete INSTANT)")
        if op not in ("upsert", "insert", "delete"):
            _fail(f"--op must be upsert, insert or delete, not {op!r}")
        rows = _read_records(records)
        if create:
            if not key:
                _fail("--create needs --key")
            if table_type not in ("MERGE_ON_READ", "COPY_ON_WRITE"):
                _fail(f"--table-type must be MERGE_ON_READ or COPY_ON_WRITE, not {table_type!r}")
            if table_version not in (6, 8, 9):
                _fail(f"--table-version must be 6, 8 or 9, not {table_version}")
            writer = create_table_for_records(path, rows, table_type=table_type, version=table_version,
                                              key=_fields(key), ordering=_fields(ordering),
                                              partition=_fields(partition), hive_style=hive_style,
                                              urlencode=urlencode, partition_time_format=partition_time_format,
                                              base_file_format=base_file_format, **opts)
        else:
            writer = HudiWriter(_load(path), **opts)
        result = writer.write(rows, op, leave_inflight=leave_inflight)
    except HudiError as e:
        _fail(str(e))
    typer.echo(result.instant)


@app.command()
def demo(path: str = typer.Argument(..., help="Where to create (or continue) the demo table."),
         commits: int = typer.Option(0, "--commits", help="Stop after N commits (0: run until stopped)."),
         interval: float = typer.Option(5.0, "--interval", help="Seconds between commits."),
         table_type: str = typer.Option("MERGE_ON_READ", "--table-type"),
         table_version: int = typer.Option(8, "--table-version"),
         callback_url: Optional[str] = typer.Option(None, "--callback-url"),
         callback_key: Optional[str] = typer.Option(None, "--callback-key", envvar="TMS_CALLBACK_KEY")):
    """The demo writer: a trips table receiving inserts, updates and deletes."""
    from tms.demo import run_demo_writer
    try:
        run_demo_writer(path, commits=commits, interval=interval, table_type=table_type,
                        version=table_version, callback_url=callback_url, callback_key=callback_key,
                        echo=typer.echo)
    except HudiError as e:
        _fail(str(e))


@app.command()
def up(data_dir: Path = typer.Option(Path(".tms"), "--data-dir", envvar="TMS_DATA_DIR",
                                     help="Local state: the embedded database, the demo table, logs."),
       host: str = typer.Option("127.0.0.1", "--host", help="Interface the service listens on."),
       port: int = typer.Option(8080, "--port", help="Port the service listens on."),
       commits: int = typer.Option(0, "--commits", help="Stop after N demo commits (0: run until stopped)."),
       interval: float = typer.Option(5.0, "--interval", help="Seconds between demo commits.")):
    """Run TMS on this machine with embedded defaults: the service with an embedded PostgreSQL, a demo
    table registered with it, and the demo writer posting Hudi's commit callbacks."""
    from tms.local import run_local
    try:
        run_local(data_dir, host=host, port=port, commits=commits, interval=interval, echo=typer.echo)
    except KeyboardInterrupt:
        pass
    except (HudiError, RuntimeError) as e:
        _fail(str(e))


def _mount_role_commands() -> None:
    """Commands that live with their roles: the service's (serve, tokens, db), the planner's (schedule,
    planner), the executor's (execute) and the worker's (worker)."""
    from tms import cli_service
    from tms.execute import cli as execute_cli
    from tms.planner import cli as planner_cli
    from worker import cli as worker_cli
    cli_service.register(app)
    planner_cli.register(app)
    execute_cli.register(app)
    worker_cli.register(app)


_mount_role_commands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
