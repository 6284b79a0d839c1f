"""Control-plane commands, mounted into the `tms` CLI with `register(app)`:

    tms serve [--host H] [--port P]      the HTTP service (embedded database when none is configured)
    tms tokens create --role R [--name N] [--json]  print a new API token
    tms db upgrade                        migrate the database to head
"""
from __future__ import annotations

import signal
import sys
from typing import Annotated, Any

import typer

from tms.config import load_settings
from tms.instance import LOG_FORMAT
from tms.ops.output import output_for


def serve(host: Annotated[str | None, typer.Option(help="Interface to listen on [TMS_HOST]")] = None,
          port: Annotated[int | None, typer.Option(help="Port to listen on [TMS_PORT]")] = None) -> None:
    """Run the TMS HTTP service."""
    # The web stack (uvicorn, FastAPI and the service's app) loads only for `tms serve`.
    import uvicorn

    from service.app import create_app

    overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    settings = load_settings(**overrides)
    app = create_app(settings)
    # uvicorn re-raises SIGTERM once it has shut down; exiting normally instead runs the atexit
    # hooks, which stop the embedded PostgreSQL when this was its last user.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    uvicorn.run(app, host=settings.service.host, port=settings.service.port, log_level=settings.log_level.lower(),
                access_log=False, log_config=log_config(settings.log_level))


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging as the other roles log (tms.instance.LOG_FORMAT: a timestamp, the level, the logger),
    for uvicorn's loggers and the service's own."""
    handler = {"formatter": "tms", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
    return {"version": 1, "disable_existing_loggers": False,
            "formatters": {"tms": {"format": LOG_FORMAT}},
            "handlers": {"tms": handler},
            "loggers": {"uvicorn": {"handlers": ["tms"], "level": level.upper(), "propagate": False},
                        "uvicorn.access": {"handlers": ["tms"], "level": level.upper(), "propagate": False},
                        "httpx": {"level": "WARNING"}},  # a line per webhook or probe request otherwise
            "root": {"handlers": ["tms"], "level": level.upper()}}


tokens = typer.Typer(help="API tokens.", no_args_is_help=True)


@tokens.command("create")
def create_token(role: Annotated[str, typer.Option(help="viewer | operator | admin")],
                 name: Annotated[str, typer.Option(help="A note on who uses it")] = "",
                 as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts: the token, its id, "
                                                                      "role and name.")] = False) -> None:
    """Create an API token and print it (it cannot be shown again). The database is TMS_DATABASE_URL's, else
    that of the `tms up` running on this machine (from TMS_DATA_DIR, or from any directory); none is created."""
    # The database layer (SQLAlchemy, psycopg, the embedded PostgreSQL) loads only for the commands using it.
    from tms.db import Database, TokenRepo, migrate
    from tms.db.startup import existing_database

    settings = load_settings()
    if role not in ("viewer", "operator", "admin"):
        raise typer.BadParameter("expected viewer, operator or admin", param_hint="--role")
    found = existing_database(settings)
    if not found.configured:
        typer.echo(f"using {found.origin}", err=True)
    if settings.migrate_on_start:
        migrate.upgrade(found.url)
    database = Database(found.url)
    try:
        with database.transaction() as session:
            row, token = TokenRepo(session).create(role, name)
            made = {"id": row.id, "role": role, "name": name, "token": token}
    finally:
        database.dispose()
    output_for(as_json).show(made, token)


db = typer.Typer(help="The metadata database.", no_args_is_help=True)


@db.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision")] = "head") -> None:
    """Migrate the metadata database (the embedded one if TMS_DATABASE_URL is unset) to a revision."""
    # As in create_token: the database layer loads only here.
    from tms.db import migrate
    from tms.db.startup import database_url

    url = database_url(load_settings())
    migrate.upgrade(url, revision)
    typer.echo(f"database at {revision}")


def register(app: typer.Typer) -> None:
    """Add `serve`, `tokens` and `db` to the given Typer app."""
    app.command("serve")(serve)
    app.add_typer(tokens, name="tokens")
    app.add_typer(db, name="db")

