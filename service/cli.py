"""Control-plane commands, mounted into the `tms` CLI with `register(app)`:

    tms serve [--host H] [--port P]      the HTTP service (embedded database when none is configured)
    tms tokens create --role R [--name N] print a new API token
    tms db upgrade                        migrate the database to head
"""
from __future__ import annotations

import signal
import sys
from typing import Annotated

import typer

from tms.config import load_settings


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
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(),
                access_log=False)


tokens = typer.Typer(help="API tokens.", no_args_is_help=True)


@tokens.command("create")
def create_token(role: Annotated[str, typer.Option(help="viewer | operator | admin")],
                 name: Annotated[str, typer.Option(help="A note on who uses it")] = "") -> None:
    """Create an API token and print it (it cannot be shown again)."""
    # The database layer (SQLAlchemy, psycopg, the embedded PostgreSQL) loads only for the commands using it.
    from tms.db import Database, TokenRepo
    from tms.db.startup import database_url, open_database

    settings = load_settings()
    if role not in ("viewer", "operator", "admin"):
        raise typer.BadParameter("expected viewer, operator or admin", param_hint="--role")
    database = open_database(settings) if settings.migrate_on_start else Database(database_url(settings))
    try:
        with database.transaction() as session:
            _, token = TokenRepo(session).create(role, name)
    finally:
        database.dispose()
    typer.echo(token)


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

