"""`tms up`: TMS on one machine with embedded defaults — the service (and its embedded PostgreSQL) and the
other roles as child processes, a demo table registered with it, the demo writer posting Hudi's commit
callbacks, and a watcher printing what becomes of them (tasks planned, run by the worker on local Spark)."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import cast

import httpx

from tms.demo import ensure_demo_table, run_demo_writer

# The roles started as child processes, each a `tms` subcommand.
ROLES = ("serve", "planner", "worker", "manager")
# The demo table's policy: a compaction is due every few delta commits, so one completes within a minute.
DEMO_POLICIES = {"hoodie.compact.inline.max.delta.commits": 3,
                 "hoodie.compact.inline.trigger.strategy": "NUM_COMMITS_AFTER_LAST_REQUEST"}
ACTIVE_STATES = ("PENDING", "BLOCKED", "RUNNABLE", "RUNNING")


def _spawn(role: str, env: dict[str, str], log_dir: Path) -> subprocess.Popen:
    log = open(log_dir / f"{role}.log", "ab")
    return subprocess.Popen([sys.executable, "-m", "tms.cli", role], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_ready(url: str, procs: list[subprocess.Popen], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{' '.join(cast(list[str], p.args)[3:])} exited with {p.returncode} while starting")
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
    response = httpx.post(f"{url}/api/v1/tables", json={"base_path": path, "policies": DEMO_POLICIES},
                          headers=headers, timeout=30)
    response.raise_for_status()
    return response.json()["id"]


class TaskWatcher:
    """Polls the service's task list and prints every task's state changes."""

    def __init__(self, url: str, admin: str, echo: Callable[[str], None], interval: float = 1.0):
        self.url, self.headers, self.echo, self.interval = url, {"Authorization": f"Bearer {admin}"}, echo, interval
        self.states: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="task-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def poll(self) -> None:
        try:
            tasks = httpx.get(f"{self.url}/api/v1/tasks", params={"limit": 100}, headers=self.headers,
                              timeout=10).json()["items"]
        except (httpx.HTTPError, KeyError, ValueError):
            return  # the service is busy or stopping: next poll
        for task in sorted(tasks, key=lambda t: t["id"]):
            if self.states.get(task["id"]) != task["state"]:
                self.states[task["id"]] = task["state"]
                self.echo(self._describe(task))

    def active(self) -> int:
        return sum(1 for state in self.states.values() if state in ACTIVE_STATES)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    @staticmethod
    def _describe(task: dict) -> str:
        line = f"task {task['id']}: {task['action']} {task['instant']} {task['state']}"
        resources = task["requested_resources"]
        if task["state"] == "RUNNING" and resources:
            line += (f" on queue {task['queue']} ({resources['executors']} executor(s) of "
                     f"{resources['executor_memory_mb']} MB)")
        elif task["state"] == "SUCCEEDED" and task["started_at"] and task["finished_at"]:
            took = datetime.fromisoformat(task["finished_at"]) - datetime.fromisoformat(task["started_at"])
            line += f" in {took.total_seconds():.0f} s"
        elif task["error"]:
            line += f": {task['error']}"
        return line


def _settle(watcher: TaskWatcher, echo: Callable[[str], None], quiet_seconds: float = 10,
            timeout: float = 600) -> None:
    """After the last demo commit: wait until the work it caused is done (no task active for a while)."""
    echo("the demo writer is done; waiting for the tasks it caused to finish")
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        watcher.poll()
        if watcher.active():
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_seconds:
            return
        time.sleep(1)
    echo(f"{watcher.active()} task(s) still active after {timeout:.0f} s; stopping")


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
    watcher = TaskWatcher(url, admin, echo)
    try:
        _wait_ready(url, procs)
        path = str(tables / "trips")
        ensure_demo_table(path)
        table_id = _register(url, admin, path)
        echo(f"TMS is up: {url} (API docs {url}/docs, metrics {url}/metrics), logs in {logs}")
        echo(f"admin token: {admin}")
        echo(f"demo table {path} registered as table {table_id}; the demo writer posts callbacks to TMS, "
             f"and a compaction is due every {DEMO_POLICIES['hoodie.compact.inline.max.delta.commits']} commits")
        watcher.start()
        run_demo_writer(path, commits=commits, interval=interval, callback_url=f"{url}/api/v1/hudi/callback",
                        callback_key=callback_key, echo=echo)
        watcher.stop()
        _settle(watcher, echo)
    finally:
        watcher.stop()
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
