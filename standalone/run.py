"""`tms up`: TMS on one machine with embedded defaults — the database made ready once (an embedded
PostgreSQL unless TMS_DATABASE_URL is set), the roles as supervised child processes, a demo table
registered with the service, the demo writer posting Hudi's commit callbacks, and a watcher printing what
becomes of them (tasks planned, run by the worker on local Spark). SIGINT, SIGTERM and SIGHUP stop it all:
the roles, then the embedded PostgreSQL."""
from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx

from tms import display, local_instances
from tms.config import load_settings
from tms.errors import TMSError
from tms.ops.client import TmsClient
from tms.ops.names import TASK_STATES

from . import database as local_database
from . import port as service_port
from .credentials import kept_secret
from .demo import ensure_demo_table, run_demo_writer
from .engine_watch import EngineWatch
from .supervisor import Supervisor

# The roles started as child processes, each a `tms` subcommand.
ROLES = ("serve", "planner", "worker", "manager")
# The demo table's policy: a compaction is due every few delta commits, so one completes within a minute;
# the demo table asks for clustering (off by default, as in Hudi: `tms up` clusters no other table unless its
# policy asks), which merges a city's small file groups (those made while its file group was being compacted)
# now and then, never rewriting a city's one file group alone.
ASKS_FOR_CLUSTERING = "hoodie.clustering.async.enabled"
DEMO_POLICIES = {"hoodie.compact.inline.max.delta.commits": 3,
                 "hoodie.compact.inline.trigger.strategy": "NUM_COMMITS_AFTER_LAST_REQUEST",
                 ASKS_FOR_CLUSTERING: True,
                 "hoodie.clustering.async.max.commits": 10,
                 "hoodie.clustering.plan.strategy.single.group.clustering.enabled": False}
ACTIVE_STATES = ("PENDING", "BLOCKED", "RUNNABLE", "RUNNING")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
READY_TIMEOUT_SECONDS = 180.0


class Stopped(Exception):
    """A stop signal arrived."""


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """While inside: SIGINT, SIGTERM and SIGHUP set `stop` (the previous handlers come back after)."""
    previous = {signum: signal.signal(signum, lambda *_: stop.set()) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _wait_ready(url: str, supervisor: Supervisor, stop: threading.Event,
                timeout: float = READY_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        supervisor.check()
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if stop.wait(0.5):
            raise Stopped
    raise TMSError(f"the service at {url} was not ready within {timeout:.0f} s (see its log, serve.log)")


def _register(client: TmsClient, path: str) -> int:
    for t in client.all_pages("/tables", name="trips"):
        if t["base_path"].rstrip("/").endswith(path.rstrip("/")):
            if t["sources"].get(ASKS_FOR_CLUSTERING, "default") == "default":
                # Registered by a TMS whose `tms up` clustered every table: the demo table asks for it now.
                client.patch(f"/tables/{t['id']}", {"policies": {ASKS_FOR_CLUSTERING: True}})
            return int(t["id"])
    return int(client.post("/tables", {"base_path": path, "policies": DEMO_POLICIES})["id"])


class TaskWatcher:
    """Polls the service's task list and prints the tasks' state changes since it started: its first poll
    prints one line summing up the tasks that were there before, and nothing of them until they change."""

    def __init__(self, url: str, admin: str, echo: Callable[[str], None], interval: float = 1.0):
        self.url, self.headers, self.echo, self.interval = url, {"Authorization": f"Bearer {admin}"}, echo, interval
        self.states: dict[int, str] = {}
        self.table_names: dict[int, str] = {}
        self._baseline_taken = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="task-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _get(self, path: str, **params) -> dict:
        return httpx.get(f"{self.url}/api/v1{path}", params=params, headers=self.headers, timeout=10).json()

    def poll(self) -> None:
        try:
            tasks = self._get("/tasks", limit=100)["items"]
            if not self._baseline_taken:
                self.echo(self._summary())
        except (httpx.HTTPError, KeyError, ValueError):
            return  # the service is busy or stopping: next poll
        for task in sorted(tasks, key=lambda t: t["id"]):
            if self.states.get(task["id"]) != task["state"]:
                self.states[task["id"]] = task["state"]
                if self._baseline_taken:
                    self.echo(self._describe(task))
        self._baseline_taken = True

    def _summary(self) -> str:
        """One line: the tasks there were before this start, by state."""
        counts = {state: int(self._get("/tasks", state=state, limit=1)["total"]) for state in TASK_STATES}
        total = sum(counts.values())
        if not total:
            return "no task before this start"
        by_state = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
        return f"{total} task(s) before this start ({by_state}); from now on, their changes and the new ones'"

    def active(self) -> int:
        return sum(1 for state in self.states.values() if state in ACTIVE_STATES)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def _table_name(self, table_id: int) -> str:
        if table_id not in self.table_names:
            try:
                self.table_names[table_id] = str(self._get(f"/tables/{table_id}")["name"])
            except (httpx.HTTPError, KeyError, ValueError):
                return str(table_id)  # asked again next time
        return self.table_names[table_id]

    def _describe(self, task: dict) -> str:
        line = (f"task {task['id']} (table {self._table_name(task['table_id'])}): "
                f"{task['service']} {task['instant']} {task['state']}")
        resources = task["requested_resources"]
        if task["state"] == "RUNNING" and resources:
            line += (f" on queue {task['queue']} ({resources['executors']} executor(s) of "
                     f"{resources['executor_memory_mb']} MB)")
        elif task["state"] == "SUCCEEDED" and task["started_at"] and task["finished_at"]:
            seconds = (datetime.fromisoformat(task["finished_at"])
                       - datetime.fromisoformat(task["started_at"])).total_seconds()
            line += f" in {display.duration(seconds)}"
        elif task["error"]:
            line += f": {task['error']}"
        return line


class DemoWriter:
    """The demo writer in a thread; its failure is raised by `check()` in the caller's thread."""

    def __init__(self, path: str, *, commits: int, interval: float, callback_url: str, callback_key: str,
                 echo: Callable[[str], None], stop: threading.Event):
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="demo-writer", daemon=True, kwargs=dict(
            path=path, commits=commits, interval=interval, callback_url=callback_url, callback_key=callback_key,
            echo=echo, stop=stop))

    def _run(self, **kwargs) -> None:
        try:
            run_demo_writer(kwargs.pop("path"), **kwargs)
        except BaseException as e:  # reported by check()
            self.error = e

    def start(self) -> None:
        self._thread.start()

    def done(self) -> bool:
        if self.error is not None:
            raise TMSError(f"the demo writer failed: {self.error}")
        return not self._thread.is_alive()

    def join(self) -> None:
        self._thread.join()


def _supervise_until(done: Callable[[], bool], supervisor: Supervisor, stop: threading.Event,
                     timeout: float | None = None) -> bool:
    """Keep the roles running until `done()` (True), `timeout` (False) or a stop signal (Stopped)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done():
        supervisor.check()
        if deadline is not None and time.monotonic() >= deadline:
            return False
        if stop.wait(0.5):
            raise Stopped
    return True


def _settle(watcher: TaskWatcher, supervisor: Supervisor, stop: threading.Event, echo: Callable[[str], None],
            quiet_seconds: float = 10, timeout: float = 600) -> None:
    """After the last demo commit: wait until the work it caused is done (no task active for a while)."""
    echo("the demo writer is done; waiting for the tasks it caused to finish")
    quiet_since = time.monotonic()

    def quiet() -> bool:
        nonlocal quiet_since
        watcher.poll()
        if watcher.active():
            quiet_since = time.monotonic()
        return time.monotonic() - quiet_since >= quiet_seconds

    if not _supervise_until(quiet, supervisor, stop, timeout):
        echo(f"{watcher.active()} task(s) still active after {timeout:.0f} s; stopping")


def run_local(data_dir: Path, *, host: str, port: int, commits: int, interval: float,
              echo: Callable[[str], None]) -> None:
    """Run until the demo commits are done and their tasks finished (`commits` > 0), or a stop signal."""
    data_dir = data_dir.resolve()
    tables, logs = data_dir / "tables", data_dir / "logs"
    running = local_instances.running_for(data_dir)
    if running is not None:
        other = service_port.free_port_after(host, port)
        raise TMSError(f"TMS already runs from {data_dir} (pid {running.pid}, {running.url}): use it, or start a "
                       f"second TMS with a data directory and port of its own, e.g. --data-dir "
                       f"{service_port.another_data_dir(data_dir)} --port {other or '<port>'}")
    service_port.ensure_free(host, port, data_dir)  # before anything starts: a busy port is one line, at once
    settings = load_settings(data_dir=data_dir)
    tables.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    with stop_on_signals(stop):
        database = local_database.prepare(settings.database_url, data_dir)
        try:
            _run_roles(data_dir, database.url, storage_roots(settings.storage_roots, tables), tables, logs,
                       host=host, port=port, commits=commits, interval=interval, echo=echo, stop=stop)
        except Stopped:
            echo("stopping")
        finally:
            database.stop()


def storage_roots(configured: list[str], tables: Path) -> list[str]:
    """The user's TMS_STORAGE_ROOTS and the data directory's `tables` (the demo table's), in that order."""
    return [*configured, str(tables)] if str(tables) not in configured else list(configured)


def path_for_tms() -> str | None:
    """The folder that holds this installation's `tms` (`/home/me/tms/.venv/bin`) when the shell would not find
    it (`./dev run` does not put it on the PATH), else None."""
    mine = Path(sys.executable).parent / "tms"
    on_path = shutil.which("tms")
    if not mine.exists() or (on_path is not None and Path(on_path).absolute() == mine.absolute()):
        return None
    return str(mine.parent.absolute())


def ops_line(url: str, token: str) -> str:
    """The one line that readies a shell for the ops commands: `tms` on the PATH (when it is not), TMS_URL and
    TMS_TOKEN."""
    folder = path_for_tms()
    path = f'PATH="{folder}:$PATH" ' if folder else ""
    return f"ops commands: export {path}TMS_URL={url} TMS_TOKEN={token}; tms status"


def _run_roles(data_dir: Path, database_url: str, roots: list[str], tables: Path, logs: Path, *, host: str,
               port: int, commits: int, interval: float, echo: Callable[[str], None],
               stop: threading.Event) -> None:
    admin = kept_secret(data_dir, "admin-token", "TMS_ADMIN_TOKEN")
    callback_key = kept_secret(data_dir, "callback-key", "TMS_CALLBACK_KEY")
    url = f"http://{host}:{port}"
    env = {**os.environ, "TMS_DATA_DIR": str(data_dir), "TMS_STORAGE_ROOTS": ",".join(roots),
           "TMS_DATABASE_URL": database_url, "TMS_MIGRATE_ON_START": "false", "TMS_ADMIN_TOKEN": admin.value,
           "TMS_CALLBACK_KEY": callback_key.value, "TMS_HOST": host, "TMS_PORT": str(port)}
    supervisor = Supervisor(ROLES, env, logs, echo)
    watcher = TaskWatcher(url, admin.value, echo)
    engine_watch = EngineWatch(logs / "worker.log", echo)  # the worker starts Spark as it comes up
    writer: DemoWriter | None = None
    if stop.is_set():
        raise Stopped
    engine_watch.start()
    supervisor.start()
    local_instances.record(local_instances.LocalInstance(os.getpid(), str(data_dir), database_url, url))
    try:
        _wait_ready(url, supervisor, stop)
        path = str(tables / "trips")
        ensure_demo_table(path)
        with TmsClient(url, admin.value) as client:
            table_id = _register(client, path)
        echo(f"TMS is up: {url} (API docs {url}/docs, metrics {url}/metrics), logs in {logs}")
        echo(f"admin token: {admin.value}" + (f" (kept in {admin.kept_in})" if admin.kept_in else ""))
        echo(f"callback key: {callback_key.value}"
             + (f" (kept in {callback_key.kept_in})" if callback_key.kept_in else ""))
        token = f"$(cat {admin.kept_in})" if admin.kept_in else "<the admin token>"
        echo(ops_line(url, token))
        echo(f"tables may be registered under: {', '.join(roots)} (TMS_STORAGE_ROOTS, and the data directory's)")
        echo(f"demo table {path} registered as table {table_id}; the demo writer posts callbacks to TMS, "
             f"a compaction is due every {DEMO_POLICIES['hoodie.compact.inline.max.delta.commits']} commits "
             f"and (asked for by its policy) a clustering of small files every "
             f"{DEMO_POLICIES['hoodie.clustering.async.max.commits']}")
        watcher.start()
        writer = DemoWriter(path, commits=commits, interval=interval, callback_url=f"{url}/api/v1/hudi/callback",
                            callback_key=callback_key.value, echo=echo, stop=stop)
        writer.start()
        _supervise_until(writer.done, supervisor, stop)
        watcher.stop()
        _settle(watcher, supervisor, stop, echo)
    finally:
        stop.set()  # the demo writer stops after its commit in progress
        watcher.stop()
        engine_watch.stop()
        if writer is not None:
            writer.join()
        supervisor.stop()
        local_instances.forget(data_dir)
