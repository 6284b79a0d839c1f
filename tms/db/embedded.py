"""An embedded PostgreSQL under the data directory, so a first run needs no database setup.

The server comes from the `pgserver` package when it is installed (it stops when the last TMS
process using it exits), else from the PostgreSQL binaries on the machine (PATH or
/usr/lib/postgresql/*/bin; that server keeps running for the next start). Either listens on a Unix
socket only, never on a network port."""
from __future__ import annotations

import glob
import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import make_url

from .engine import libpq_url
from .errors import DatabaseError

DATABASE_NAME = "tms"
SUPERUSER = "postgres"
_MAX_SOCKET_PATH = 100  # Unix socket paths are limited to ~107 bytes
_servers: dict[Path, Any] = {}  # pgserver handles, kept alive for the life of the process


class EmbeddedDatabaseError(DatabaseError, RuntimeError):
    """The embedded PostgreSQL could not be started."""


def embedded_database_url(data_dir: Path) -> str:
    """Start (or reuse) the server in `data_dir/postgres`; the URL of its `tms` database."""
    pgdata = Path(data_dir).expanduser().resolve() / "postgres"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server_url = _start_pgserver(pgdata) if import_pgserver() else start_with_binaries(pgdata)
    create_database(server_url, DATABASE_NAME)
    return with_database(server_url, DATABASE_NAME)


def with_database(server_url: str, database: str) -> str:
    return make_url(server_url).set(database=database).render_as_string(hide_password=False)


def create_database(server_url: str, database: str) -> None:
    """CREATE DATABASE unless it exists (safe when several processes start at once)."""
    with psycopg.connect(libpq_url(with_database(server_url, "postgres")), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            return
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        except psycopg.errors.DuplicateDatabase:
            pass


def import_pgserver() -> Any:
    """The pgserver module, or None. Its import warns when XDG_RUNTIME_DIR is unset (it falls back
    to /tmp, which is fine), so the warning is silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError:
            return None
    return pgserver


def _start_pgserver(pgdata: Path) -> str:
    pgserver = import_pgserver()
    server = _servers.get(pgdata)
    if server is None:
        try:
            server = _servers[pgdata] = pgserver.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:  # pgserver raises bare subprocess/assertion errors
            raise EmbeddedDatabaseError(f"could not start the embedded PostgreSQL in {pgdata}: {exc}") from exc
    return server.get_uri()


# --- the machine's PostgreSQL binaries ------------------------------------------------------------

def find_postgres_bin() -> Path | None:
    """The folder holding initdb and pg_ctl: from PATH, else the newest /usr/lib/postgresql/*/bin."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                        if Path(p).parent.name.isdigit() else 0)
    return Path(candidates[-1]) if candidates else None


def start_with_binaries(pgdata: Path) -> str:
    """initdb (first time) and start a server for `pgdata`; the URL of its `postgres` database.
    As root, the server runs as the `postgres` system user (PostgreSQL refuses to run as root)."""
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        raise EmbeddedDatabaseError(
            "no PostgreSQL found: install pgserver or PostgreSQL, or set TMS_DATABASE_URL")
    run_as = _server_user()
    pgdata.mkdir(parents=True, exist_ok=True)
    socket_dir = _socket_dir(pgdata)
    if run_as is not None:
        for path in {pgdata, socket_dir}:
            os.chown(path, run_as.pw_uid, run_as.pw_gid)
    if not (pgdata / "PG_VERSION").exists():
        _run(run_as, [bin_dir / "initdb", "-D", pgdata, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8"])
    if _run(run_as, [bin_dir / "pg_ctl", "-D", pgdata, "status"], check=False) != 0:
        _run(run_as, [bin_dir / "pg_ctl", "-D", pgdata, "-w", "-t", "60", "-l", pgdata / "server.log",
                      "-o", f"-c listen_addresses='' -k {socket_dir}", "start"])
    return f"postgresql://{SUPERUSER}@/postgres?host={socket_dir}"


def stop_with_binaries(pgdata: Path) -> None:
    """Stop a server started by `start_with_binaries` (fast shutdown)."""
    bin_dir = find_postgres_bin()
    if bin_dir is not None:
        _run(_server_user(), [bin_dir / "pg_ctl", "-D", pgdata, "-w", "-m", "fast", "stop"], check=False)


def _server_user() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise EmbeddedDatabaseError(
            "running as root and there is no 'postgres' user to run the embedded PostgreSQL as") from None


def _socket_dir(pgdata: Path) -> Path:
    if len(str(pgdata / ".s.PGSQL.5432")) <= _MAX_SOCKET_PATH:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"tms-pg-{digest}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _run(run_as: pwd.struct_passwd | None, argv: list, *, check: bool = True) -> int:
    cmd = [str(a) for a in argv]
    if run_as is not None:
        cmd = ["runuser", "-u", run_as.pw_name, "--", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise EmbeddedDatabaseError(f"{Path(str(argv[0])).name} failed: {lines[-1] if lines else proc.returncode}")
    return proc.returncode
