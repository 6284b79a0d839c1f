"""`tms up`, mounted on the `tms` app by `register(app)`."""
from __future__ import annotations

import sys
from pathlib import Path

import typer

from tms.errors import ONE_LINE_ERRORS

from . import port as service_port


def up(data_dir: Path = typer.Option(Path(".tms"), "--data-dir", envvar="TMS_DATA_DIR",
                                     help="Local state: the embedded database, the demo table, logs, the admin "
                                          "token and callback key."),
       host: str = typer.Option("127.0.0.1", "--host", help="Interface the service listens on."),
       port: int = typer.Option(8080, "--port", help="Port the service listens on; checked first: when it is "
                                                      "in use, tms up says by what and starts nothing."),
       commits: int = typer.Option(0, "--commits", help="Stop after N demo commits (0: run until stopped)."),
       interval: float = typer.Option(5.0, "--interval", help="Seconds between demo commits.")):
    """Run TMS on this machine with embedded defaults: the service with an embedded PostgreSQL, the planner
    and the worker, a demo table registered with it, and the demo writer posting Hudi's commit callbacks.
    Tables may be registered under the data directory's `tables` folder and under the comma-separated
    prefixes of TMS_STORAGE_ROOTS when set (TMS_STORAGE_ROOTS=/data/hudi tms up). SIGINT, SIGTERM or SIGHUP
    stop everything it started."""
    from .run import run_local  # the roles' machinery loads once the port is known free (check_port_first)
    from .supervisor import RoleFailed

    try:
        run_local(data_dir, host=host, port=port, commits=commits, interval=interval, echo=typer.echo)
    except RoleFailed as e:
        typer.echo(f"the last lines of {e.log}:", err=True)
        for line in e.tail:
            typer.echo(f"  {line}", err=True)
        raise


def check_port_first(args: list[str]) -> None:
    """Before the rest of the CLI loads: exit 1 with one line when the port `tms up args` would listen on is
    in use (the options parsed as `up` parses them; anything it would refuse is left for it to say). Asked for
    its help, `up` prints it whatever holds the port."""
    if HELP_OPTIONS & set(args[:args.index("--")] if "--" in args else args):
        return
    command = typer.main.get_command(_up_alone)
    try:
        params = command.make_context("up", list(args), resilient_parsing=True).params
        host, port, data_dir = params["host"], params["port"], params["data_dir"]
    except Exception:  # noqa: BLE001 (any parsing trouble: `up` itself reports it)
        return
    if host is None or port is None:
        return
    try:
        service_port.ensure_free(host, port, data_dir)
    except ONE_LINE_ERRORS as e:
        typer.echo(f"error: {e}", err=True)
        sys.exit(1)


HELP_OPTIONS = {"--help", "-h"}
_up_alone = typer.Typer()
_up_alone.command()(up)


def register(app: typer.Typer) -> None:
    app.command("up")(up)
