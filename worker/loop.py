"""The worker process: it keeps up to `settings.worker.slots` jobs running, and beside them up to
`settings.worker.light_slots` of the light services' (LIGHT_SERVICES: archival). Each turn of its role loop
(tms.instance) it hands back the tasks of dead workers and claims runnable tasks for its free slots; each claimed
task runs under a JobSupervisor in a thread of its own."""
from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path

from tms.config import Settings
from tms.db import TASK_RUNNABLE, Database, Listener, QueueRepo
from tms.execute.spark_submit import build_py_files, executor_settings_conf
from tms.instance import JOB_TIMEOUT_FACT, RoleLoop
from tms.table_context import table_context
from tms.table_service import LIGHT_SERVICES

from .claim import ClaimLimits, claim_next, requeue_expired_leases
from .retry_policy import RetryLimits
from .supervisor import JobSettings, JobSupervisor
from .warm_engine import WarmEngines

log = logging.getLogger(__name__)
DEFAULT_QUEUE = "local"
# The created queue's job width: a dedicated job and its warm engine both get up to this many executors
# (task slots on a local master), so every plan within its memory fits the warm engine.
DEFAULT_QUEUE_EXECUTORS = 4

def service_url(settings: Settings) -> str:
    """Where jobs reach the service's fence endpoint."""
    if settings.worker.service_url:
        return settings.worker.service_url
    host = "127.0.0.1" if settings.service.host in ("0.0.0.0", "::", "") else settings.service.host
    return f"http://{host}:{settings.service.port}"


class Worker:
    def __init__(self, database: Database, settings: Settings, *, worker_id: str | None = None):
        self.database = database
        self.settings = settings
        own = settings.worker
        self.loop = RoleLoop(database, ["worker"], heartbeat_seconds=settings.heartbeat_seconds,
                             poll_seconds=own.poll_seconds, instance_id=worker_id)
        self.id = self.loop.id
        self.limits = ClaimLimits(lease_seconds=own.lease_seconds,
                                  driver_memory_mb=own.driver_memory_mb,
                                  driver_cores=own.driver_cores,
                                  max_executors_per_table=own.max_executors_per_table,
                                  merge_budget_bytes=own.merge_memory_bytes, context=table_context(settings))
        self._jobs: dict[int, tuple[JobSupervisor, threading.Thread]] = {}
        self._lock = threading.Lock()
        self.warm_engines: WarmEngines | None = None  # the spark runner's, made by run()
        self._job_settings: JobSettings | None = None  # made by run()

    # --- lifecycle ----------------------------------------------------------------------------------
    def run(self) -> None:
        """Work until `stop()`; then kill the running jobs (their attempts fail) and deregister."""
        scratch = Path(tempfile.mkdtemp(prefix="tms-worker-"))
        try:
            self._job_settings = self._make_job_settings(scratch)
            self._ensure_a_queue()
            log.info("worker %s: %s slot(s), %s jobs, fence at %s", self.id, self.settings.worker.slots,
                     self.settings.worker.runner, self._job_settings.service_url)
            # A task made runnable wakes a worker with a free slot at once (its poll stays the guarantee).
            listener = Listener(self.database.url, TASK_RUNNABLE, self._on_runnable).start()
            try:
                self.loop.run(self, finish=self._finish)
            finally:
                listener.stop()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def stop(self) -> None:
        self.loop.stop()

    @property
    def running(self) -> list[int]:
        with self._lock:
            return list(self._jobs)

    def _make_job_settings(self, scratch: Path) -> JobSettings:
        s, own = self.settings, self.settings.worker
        py_files = build_py_files(scratch) if own.runner == "spark" else None  # built once, shipped each job
        log_dir = s.data_dir.resolve() / "jobs"
        if py_files is not None:
            self.warm_engines = WarmEngines(py_files=py_files, run_dir=scratch / "engines", log_dir=log_dir,
                                            driver_memory_mb=own.driver_memory_mb,
                                            driver_cores=own.driver_cores,
                                            settings_conf=executor_settings_conf(s))
        return JobSettings(database=self.database, service_url=service_url(s), runner=own.runner,
                           py_files=py_files, log_dir=log_dir,
                           lease_seconds=own.lease_seconds, timeout_seconds=own.job_timeout_seconds,
                           retry_limits=RetryLimits.from_settings(own), warm_engines=self.warm_engines,
                           shadow_root=own.shadow_root, storage_roots=tuple(s.storage_roots),
                           context=table_context(s), settings_conf=executor_settings_conf(s))

    def _ensure_a_queue(self) -> None:
        """A first start with no queue configured gets a local one, so jobs run out of the box."""
        with self.database.transaction() as session:
            created = QueueRepo(session).create_if_none(
                DEFAULT_QUEUE, kind="local", master=self.settings.worker.default_master,
                capacity=self.settings.worker.slots, max_executors=DEFAULT_QUEUE_EXECUTORS,
                warm_engine_enabled=self.settings.worker.default_warm_engine,
                warm_engine_executors=DEFAULT_QUEUE_EXECUTORS)
        if created is not None:
            log.info("no queue was configured: created queue %r (%s)", created.name, created.master)

    # --- one turn -----------------------------------------------------------------------------------
    def turn(self) -> None:
        """Sync the warm engines, hand back the tasks of dead workers, and claim tasks for the free slots (a
        failure, e.g. a database outage, is logged by the loop and tried again next turn)."""
        assert self._job_settings is not None, "run() makes them"
        if self.warm_engines is not None:
            self.warm_engines.sync(self.database)
        for task_id in requeue_expired_leases(self.database):
            log.info("task %s: its worker's lease expired; runnable again", task_id)
        own = self.settings.worker
        # With a light lane, the slots take no light job; without one, any job.
        for light, slots in ((False if own.light_slots else None, own.slots), (True, own.light_slots)):
            while self._running_in(light) < slots and not self.loop.stopping:
                claimed = claim_next(self.database, self.id, self.limits, light=light)
                if claimed is None:
                    break
                self._start(JobSupervisor(self._job_settings, claimed))

    def _on_runnable(self) -> None:
        own = self.settings.worker
        if self._running_in(None) < own.slots + own.light_slots:
            self.loop.wake()

    def _running_in(self, light: bool | None) -> int:
        """Jobs running in the light lane (True) or the slots (otherwise)."""
        with self._lock:
            return sum((supervisor.claimed.service in LIGHT_SERVICES) == bool(light)
                       for supervisor, _ in self._jobs.values()) if light is not None else len(self._jobs)

    def facts(self) -> dict[str, object]:
        # The job timeout is the worker's own setting: the manager's early warning judges its tasks by it.
        return {"slots": self.settings.worker.slots, "light_slots": self.settings.worker.light_slots,
                "running": self.running,
                JOB_TIMEOUT_FACT: self.settings.worker.job_timeout_seconds}

    def _start(self, supervisor: JobSupervisor) -> None:
        task_id = supervisor.claimed.task_id
        thread = threading.Thread(target=self._supervise, args=(supervisor,), name=f"task-{task_id}", daemon=True)
        with self._lock:
            self._jobs[task_id] = (supervisor, thread)
        thread.start()

    def _supervise(self, supervisor: JobSupervisor) -> None:
        task_id = supervisor.claimed.task_id
        try:
            supervisor.run()
        except Exception:
            log.exception("task %s: supervising its job failed", task_id)
        finally:
            with self._lock:
                self._jobs.pop(task_id, None)
            self.loop.wake()  # a free slot: look for work now

    def _finish(self) -> None:
        """On the way out: kill the running jobs (their attempts fail) and stop the warm engines."""
        self._stop_jobs()
        if self.warm_engines is not None:
            self.warm_engines.stop()

    def _stop_jobs(self) -> None:
        with self._lock:
            jobs = list(self._jobs.values())
        for supervisor, _ in jobs:
            supervisor.stop()
        for _, thread in jobs:
            thread.join()

