"""`tms up`: TMS on one machine with embedded defaults — the service (and its embedded PostgreSQL) as
child processes, a demo table registered with it, and the demo writer posting Hudi's commit callbacks."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tms.demo import ensure_demo_table, run_demo_writer

# The roles started as child processes, each a `tms` subcommand.
ROLES = ("serve",)


def _spawn(role: str, env: dict[str, str], log_dir: Path) -> subprocess.Popen:
    log = open(log_dir / f"{role}.log", "ab")
    return subprocess.Popen([sys.executable, "-m", "tms.cli", role], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_ready(url: str, procs: list[subprocess.Popen], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{' '.join(p.args[3:])} exited with {p.returncode} while starting")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the service at {url} was not ready within {timeout:.0f} s")


def _register(url: str, admin: str, path: str) -> int:
    headers = {"Authorization": f"Bearer {admin}"}
    found = httpx.get(f"{url}/api/v1/tables", params={"name": "trips"}, headers=headers, timeout=10).json()
    for t in found.get("items", []):
        if t["base_path"].rstrip("/").endswith(path.rstrip("/")):
            return t["id"]
    response = httpx.post(f"{url}/api/v1/tables", json={"base_path": path}, headers=headers, timeout=30)
    response.raise_for_status()
    return response.json()["id"]


def run_local(data_dir: Path, *, host: str, port: int, commits: int, interval: float,
              echo: Callable[[str], None]) -> None:
    data_dir = data_dir.resolve()
    tables, logs = data_dir / "tables", data_dir / "logs"
    tables.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    admin = os.environ.get("TMS_ADMIN_TOKEN") or secrets.token_urlsafe(24)
    callback_key = os.environ.get("TMS_CALLBACK_KEY") or secrets.token_urlsafe(24)
    env = {**os.environ, "TMS_DATA_DIR": str(data_dir), "TMS_STORAGE_ROOTS": str(tables),
           "TMS_ADMIN_TOKEN": admin, "TMS_CALLBACK_KEY": callback_key, "TMS_HOST": host, "TMS_PORT": str(port)}
    url = f"http://{host}:{port}"
    procs = [_spawn(role, env, logs) for role in ROLES]
    try:
        _wait_ready(url, procs)
        path = str(tables / "trips")
        ensure_demo_table(path)
        table_id = _register(url, admin, path)
        echo(f"TMS is up: {url} (API docs {url}/docs, metrics {url}/metrics), logs in {logs}")
        echo(f"admin token: {admin}")
        echo(f"demo table {path} registered as table {table_id}; the demo writer posts callbacks to TMS")
        run_demo_writer(path, commits=commits, interval=interval, callback_url=f"{url}/api/v1/hudi/callback",
                        callback_key=callback_key, echo=echo)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
