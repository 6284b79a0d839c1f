"""Warm engines: a queue with `warm_engine_enabled` gets, in each worker serving it, one long-running Spark
application with fixed executors (`jobs/warm_engine.py`, started with spark-submit and restarted when it
dies). A claimed plan whose sized job fits those executors runs there, over a Unix socket, without a
spark-submit of its own; a bigger one gets a dedicated job.

A plan on the warm engine behaves as a dedicated job for its supervisor (WarmPlan has JobProcess's wait,
kill, output and tail): the lease is renewed while it runs; a cancel, a timeout or a lost lease cancels its
Spark job group (and it starts no further Spark job; its fence refuses what remains); the engine dying
mid-plan fails the attempt like a killed job, and the retry runs on the restarted engine. Plans run
concurrently on one engine, as the queue's capacity allows, each in its own job group."""
from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tms.db import Database, QueueRecord, QueueRepo
from tms.execute.spark_submit import spark_submit_env, warm_engine_command

from .claim import ClaimedTask
from .job_process import JobLog, JobProcess
from .sizing import JobResources

log = logging.getLogger(__name__)
START_TIMEOUT_SECONDS = 300.0  # an engine not answering by then is restarted
BROKEN_AFTER_FAILED_STARTS = 3  # then plans go to dedicated jobs until it starts again
RESTART_BACKOFF_SECONDS = (1.0, 30.0)
CANCEL_WAIT_SECONDS = 30.0  # how long a kill waits for a cancelled plan to end on the engine
ENGINE_DIED_STATUS = 1
DEATH_GRACE_SECONDS = 1.0  # after a failed plan, how long to look whether its engine died


@dataclass(frozen=True)
class EngineSpec:
    """What a warm engine is started with: its queue's master and confs, and its fixed executors."""
    queue: str
    kind: str
    master: str
    spark_conf: tuple[tuple[str, str], ...]
    executors: int
    executor_memory_mb: int
    executor_cores: int
    driver_memory_mb: int
    driver_cores: int

    @classmethod
    def of(cls, queue: QueueRecord, *, driver_memory_mb: int, driver_cores: int) -> EngineSpec:
        return cls(queue=queue.name, kind=queue.kind, master=queue.master,
                   spark_conf=tuple(sorted(queue.spark_conf.items())), executors=queue.warm_engine_executors,
                   executor_memory_mb=queue.warm_engine_executor_memory_mb,
                   executor_cores=queue.warm_engine_executor_cores, driver_memory_mb=driver_memory_mb,
                   driver_cores=driver_cores)

    def fits(self, resources: JobResources) -> bool:
        """Whether a job sized `resources` fits the engine's executors."""
        return (resources.executors <= self.executors and resources.executor_memory_mb <= self.executor_memory_mb
                and resources.executor_cores <= self.executor_cores)

    def submit_master(self) -> str:
        # A local master has no executors: its task slots are the engine's executors x cores.
        return f"local[{self.executors * self.executor_cores}]" if self.master.startswith("local") else self.master

    def submit_conf(self) -> dict[str, str]:
        resources = JobResources(executor_memory_mb=self.executor_memory_mb, executors=self.executors,
                                 executor_cores=self.executor_cores, driver_memory_mb=self.driver_memory_mb,
                                 driver_cores=self.driver_cores, largest_file_group_bytes=0)
        return {**dict(self.spark_conf), **resources.spark_conf(self.kind),
                "spark.dynamicAllocation.enabled": "false",  # fixed executors, kept warm
                "spark.scheduler.mode": "FAIR"}  # concurrent plans share the executors


def _request(path: Path, message: dict[str, Any], timeout: float | None) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        conn.close()
        raise
    return conn


def _ask(path: Path, message: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """One request and its one-line answer."""
    with _request(path, message, timeout) as conn, conn.makefile("rb") as answer:
        line = answer.readline()
    if not line:
        raise ConnectionError("the warm engine closed the connection")
    reply: dict[str, Any] = json.loads(line)
    return reply


class WarmEngine:
    """One queue's warm engine in this worker: a thread starts it, watches it and restarts it when it dies."""

    def __init__(self, spec: EngineSpec, *, py_files: Path, run_dir: Path, log_dir: Path,
                 settings_conf: dict[str, str] | None = None):
        self.spec = spec
        self._settings_conf = settings_conf or {}
        self._py_files, self._run_dir, self._log_dir = py_files, run_dir, log_dir
        self._process: JobProcess | None = None
        self._socket: Path | None = None
        self._app_id: str | None = None
        self._ready = threading.Event()
        self._ever_ready = False  # the engine's first start has completed
        self._stop = threading.Event()
        self._failed_starts = 0
        self.starts = 0
        self._thread = threading.Thread(target=self._keep, name=f"warm-engine-{spec.queue}", daemon=True)
        self._thread.start()

    @property
    def app_id(self) -> str | None:
        return self._app_id if self._ready.is_set() else None

    @property
    def pid(self) -> int | None:
        """The pid of the engine's spark-submit (tests kill it)."""
        return self._process.pid if self._process is not None else None

    def running(self, start: int) -> bool:
        """Whether the engine of start number `start` still runs."""
        return self.starts == start and self._alive()

    def available(self) -> bool:
        """Running, or expected to be soon: not after repeated failed starts."""
        return self._ready.is_set() or self._failed_starts < BROKEN_AFTER_FAILED_STARTS

    def first_start_pending(self) -> bool:
        """Whether the engine is still on its first start (the worker just started), not yet ready."""
        return not self._ever_ready and not self._ready.is_set()

    def wait_ready(self, timeout: float) -> Path | None:
        """The socket of the running engine, or None if it is not ready within `timeout` seconds."""
        if not self._ready.wait(timeout):
            return None
        return self._socket

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._kill()

    # --- keeping it running -------------------------------------------------------------------------
    def _keep(self) -> None:
        while not self._stop.is_set():
            try:
                self._start()
                if self._await_ready():
                    self._failed_starts = 0
                    log.info("warm engine of queue %s: ready (%s)", self.spec.queue, self._app_id)
                    while not self._stop.is_set() and self._alive():
                        time.sleep(0.2)
                    if not self._stop.is_set():
                        log.warning("warm engine of queue %s (%s) died; restarting", self.spec.queue, self._app_id)
                else:
                    self._failed_starts += 1
                    log.warning("warm engine of queue %s did not start (%s time(s)); see %s", self.spec.queue,
                                self._failed_starts, self._log_path())
            except Exception:
                self._failed_starts += 1
                log.exception("warm engine of queue %s: cannot start", self.spec.queue)
            self._ready.clear()
            self._kill()
            if self._failed_starts:
                self._stop.wait(min(RESTART_BACKOFF_SECONDS[0] * 2 ** (self._failed_starts - 1),
                                    RESTART_BACKOFF_SECONDS[1]))

    def _log_path(self) -> Path:
        return self._log_dir / f"warm-engine-{self.spec.queue}-{self.starts}.log"

    def _start(self) -> None:
        self.starts += 1
        self._run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._socket = self._run_dir / f"{self.spec.queue}-{self.starts}.sock"
        self._socket.unlink(missing_ok=True)
        command = warm_engine_command(self._socket, py_files=self._py_files, master=self.spec.submit_master(),
                                      conf=self.spec.submit_conf(), name=f"tms warm engine {self.spec.queue}",
                                      settings_conf=self._settings_conf)
        self._process = JobProcess(command, spark_submit_env(self.spec.master), self._log_path())
        log.info("warm engine of queue %s: starting (pid %s)", self.spec.queue, self._process.pid)

    def _await_ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self._stop.is_set() and time.monotonic() < deadline and self._alive():
            try:
                assert self._socket is not None
                self._app_id = str(_ask(self._socket, {"op": "ping"})["app_id"])
                self._ever_ready = True
                self._ready.set()
                return True
            except (OSError, ValueError, KeyError):
                time.sleep(0.2)
        return False

    def _alive(self) -> bool:
        return self._process is not None and self._process.wait(0) is None

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
        if self._socket is not None:
            self._socket.unlink(missing_ok=True)

    # --- running plans ------------------------------------------------------------------------------
    def run(self, group: str, args: list[str], log_path: Path, job: str | None = None) -> WarmPlan:
        """Run a plan (jobs/run.py's `args`), or the request job `job` (its module's main(args)), on the engine."""
        return WarmPlan(self, group, args, log_path, job)


class WarmPlan(JobLog):
    """A plan running on a warm engine, seen by its supervisor as a job: its output goes to `log_path`
    (the application id first), and its exit status is jobs/run.py's (1 when the engine died under it)."""

    def __init__(self, engine: WarmEngine, group: str, args: list[str], log_path: Path, job: str | None = None):
        super().__init__(log_path)
        self.engine, self.group, self.args, self.job = engine, group, args, job
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_bytes(b"")
        self._status: int | None = None
        self._done = threading.Event()
        self._killed = threading.Event()
        self._socket: Path | None = None
        self._thread = threading.Thread(target=self._run, name=f"warm-plan-{group}", daemon=True)
        self._thread.start()

    def wait(self, timeout: float) -> int | None:
        self._done.wait(max(0.0, timeout))
        return self._status

    def kill(self) -> None:
        """Cancel the plan's Spark job group and wait (bounded) for the engine to end it."""
        if self._done.is_set() or self._killed.is_set():
            return
        self._killed.set()
        if self._socket is not None:
            try:
                _ask(self._socket, {"op": "cancel", "group": self.group})
            except (OSError, ValueError) as exc:  # the engine is gone: so is the plan
                log.info("plan %s: cannot cancel on the warm engine: %s", self.group, exc)
        if not self._done.wait(CANCEL_WAIT_SECONDS):
            log.warning("plan %s: still on the warm engine %s s after its cancel; its fence stops it",
                        self.group, CANCEL_WAIT_SECONDS)

    def _write(self, text: str) -> None:
        with open(self.log_path, "a", encoding="utf-8") as out:
            out.write(text)

    def _run(self) -> None:
        try:
            self._status = self._run_on_engine()
        except Exception as exc:  # not even sent: the attempt fails as a job that could not start
            self._write(f"error: the warm engine of queue {self.engine.spec.queue} could not run the plan: {exc}\n")
            self._status = ENGINE_DIED_STATUS
        finally:
            self._done.set()

    def _run_on_engine(self) -> int:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while self._socket is None:
            if self._killed.is_set():
                return ENGINE_DIED_STATUS
            if time.monotonic() >= deadline:
                self._write(f"error: the warm engine of queue {self.engine.spec.queue} did not start within "
                            f"{START_TIMEOUT_SECONDS:.0f} s\n")
                return ENGINE_DIED_STATUS
            self._socket = self.engine.wait_ready(0.5)
        app_id, start = self.engine.app_id, self.engine.starts
        status = None
        request = {"op": "run", "group": self.group, "args": self.args, **({"job": self.job} if self.job else {})}
        with _request(self._socket, request, None) as conn, \
                conn.makefile("rb") as answers:
            for line in answers:
                message = json.loads(line)
                if "out" in message:
                    self._write(message["out"])
                elif "exit" in message:
                    status = int(message["exit"])
                    break
        if status == 0:
            return status
        # A plan failing because its engine died says so (its own error may be any Spark or Py4J error).
        deadline = time.monotonic() + DEATH_GRACE_SECONDS * (1 if status is not None else 10)
        while self.engine.running(start) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not self.engine.running(start):
            self._write(f"\nerror: the warm engine {app_id} of queue {self.engine.spec.queue} died while it ran "
                        "the plan\n")
            return ENGINE_DIED_STATUS
        if status is None:
            self._write(f"\nerror: lost the connection to the warm engine {app_id} of queue "
                        f"{self.engine.spec.queue}\n")
            return ENGINE_DIED_STATUS
        return status


class WarmEngines:
    """This worker's warm engines, one per enabled queue that asks for one, kept in step with the queues."""

    def __init__(self, *, py_files: Path, run_dir: Path, log_dir: Path, driver_memory_mb: int, driver_cores: int,
                 settings_conf: dict[str, str] | None = None):
        self._py_files, self._run_dir, self._log_dir = py_files, run_dir, log_dir
        self._settings_conf = settings_conf or {}
        self._driver = (driver_memory_mb, driver_cores)
        self._engines: dict[str, WarmEngine] = {}
        self._lock = threading.Lock()

    def sync(self, database: Database) -> None:
        """Start the engines queues ask for; stop those no longer asked for or whose settings changed."""
        with database.transaction() as session:
            wanted = self._specs(QueueRepo(session).list(enabled_only=True))
        with self._lock:
            stale = [name for name, engine in self._engines.items() if wanted.get(name) != engine.spec]
            stopping = [self._engines.pop(name) for name in stale]
            for name, spec in wanted.items():
                if name not in self._engines:
                    self._engines[name] = WarmEngine(spec, py_files=self._py_files, run_dir=self._run_dir,
                                                     log_dir=self._log_dir, settings_conf=self._settings_conf)
        for engine in stopping:
            log.info("warm engine of queue %s: stopping (its queue's settings changed)", engine.spec.queue)
            engine.stop()

    def _specs(self, queues: Iterable[QueueRecord]) -> dict[str, EngineSpec]:
        memory, cores = self._driver
        return {q.name: EngineSpec.of(q, driver_memory_mb=memory, driver_cores=cores)
                for q in queues if q.warm_engine_enabled}

    def engine(self, queue: str) -> WarmEngine | None:
        with self._lock:
            return self._engines.get(queue)

    def engine_for(self, claimed: ClaimedTask) -> WarmEngine | None:
        """The warm engine that runs `claimed`: its queue's, if the sized job fits and the engine is (about to
        be) up; None: a dedicated job. A task given a registered engine runs that engine's code, never the
        warm engine's (the worker's own)."""
        if claimed.engine is not None:
            return None
        engine = self.engine(claimed.queue_name)
        if engine is None or not engine.spec.fits(claimed.resources) or not engine.available():
            return None
        return engine

    def stop(self) -> None:
        with self._lock:
            engines = list(self._engines.values())
            self._engines.clear()
        for engine in engines:
            engine.stop()
