"""`tms up`, mounted on the `tms` app by `register(app)`."""
from __future__ import annotations

from pathlib import Path

import typer

from standalone.run import run_local
from tms.errors import TMSError


def up(data_dir: Path = typer.Option(Path(".tms"), "--data-dir", envvar="TMS_DATA_DIR",
                                     help="Local state: the embedded database, the demo table, logs."),
       host: str = typer.Option("127.0.0.1", "--host", help="Interface the service listens on."),
       port: int = typer.Option(8080, "--port", help="Port the service listens on."),
       commits: int = typer.Option(0, "--commits", help="Stop after N demo commits (0: run until stopped)."),
       interval: float = typer.Option(5.0, "--interval", help="Seconds between demo commits.")):
    """Run TMS on this machine with embedded defaults: the service with an embedded PostgreSQL, a demo
    table registered with it, and the demo writer posting Hudi's commit callbacks."""
    try:
        run_local(data_dir, host=host, port=port, commits=commits, interval=interval, echo=typer.echo)
    except KeyboardInterrupt:
        pass
    except RuntimeError as e:  # a role that could not start
        raise TMSError(str(e)) from None


def register(app: typer.Typer) -> None:
    app.command("up")(up)
