"""Running one claimed task to its end: roll back what a failed earlier attempt left, launch the job, renew
the lease while it runs (a cancel or a takeover shows up as a refused renewal), kill it past its timeout,
and record its Spark application id, its result record, log tail and outcome on the attempt."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from tms.db import Database, TaskRepo
from tms.errors import ConfigError
from tms.execute.dispatch import executor_for
from tms.execute.errors import CONFLICT_EXIT_STATUS
from tms.execute.fencing import redact_fence_keys
from tms.execute.job_result import find_result
from tms.execute.retry import prepare_retry
from tms.execute.runner import LocalRunner
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.locks import TransactionManager
from tms.hudi.storage.paths import require_under_roots
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State
from tms.table_service import names_request
from tms.table_services import WARM_ENGINE_JOBS, entry_of

from .claim import ClaimedTask
from .commands import hudi_job, plan_arguments, python_job, request_arguments, request_job, spark_job
from .fence import database_fence, fence_url
from .job_process import JobProcess, find_app_id, last_error_line
from .retry_policy import RetryLimits, classify
from .shadow import ShadowAttempt
from .warm_engine import WarmEngines, WarmPlan

log = logging.getLogger(__name__)
TICK_SECONDS = 0.5  # how often a running job is looked at (exit, timeout, a stop request)


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed out"
    LEASE_LOST = "lease lost"  # cancelled, or taken over after the lease expired
    STOPPED = "stopped"        # the worker shut down


@dataclass(frozen=True)
class JobSettings:
    """What every job of one worker shares."""
    database: Database
    service_url: str
    runner: str  # "spark" | "python"
    py_files: Path | None  # the zip of tms and jobs spark-submit ships (spark runner)
    log_dir: Path
    lease_seconds: float
    timeout_seconds: float
    retry_limits: RetryLimits = RetryLimits(60.0, 3600.0, 3)
    warm_engines: WarmEngines | None = None  # the queues' warm engines (spark runner)
    shadow_root: str | None = None  # where shadow canaries' scratch copies go (None: <log_dir>/../shadow)
    storage_roots: tuple[str, ...] = ()  # a table found outside them when a job starts is refused
    context: HudiContext = DEFAULT_CONTEXT  # what the worker reads tables with (tms.table_context)
    settings_conf: Mapping[str, str] = field(default_factory=dict)  # executor_settings_conf of its settings


class JobSupervisor:
    def __init__(self, settings: JobSettings, claimed: ClaimedTask):
        self.settings = settings
        self.claimed = claimed
        self._stop = threading.Event()
        self._app_id: str | None = None
        self._result: dict[str, Any] | None = None  # the job's result record, once it printed it

    def stop(self) -> None:
        """Ask the supervisor to kill the job and fail the attempt (the worker is shutting down)."""
        self._stop.set()

    def run(self) -> Outcome:
        c = self.claimed
        log.info("task %s: %s %s of %s, attempt %s on queue %s, engine %s (%s)", c.task_id, c.service, c.instant,
                 c.table_name, c.attempt, c.queue_name, c.engine.name if c.engine else "builtin",
                 c.resources.as_dict())
        shadow: ShadowAttempt | None = None
        try:
            if self._prepare():
                return self._finish(Outcome.SUCCEEDED, "", error=None)
            if c.shadow is not None:
                shadow = ShadowAttempt(c, self.settings.shadow_root or str(self.settings.log_dir.parent / "shadow"),
                                       self.settings.database, self.settings.context)
                stopped = self._run_shadow(shadow)
                if stopped is not None:
                    return self._finish(stopped, "", error=self._error(stopped, None, ""))
            job = self._launch()
        except Exception as e:  # an unreadable table or plan, a lost fence, no spark-submit: the attempt fails
            return self._finish(Outcome.FAILED, "", error=f"cannot start: {e}")
        try:
            outcome, status = self._watch(job)
        finally:
            job.kill()  # what is left of its process group; never a job running unsupervised
        self._read_output(job.new_output())
        tail = job.tail()
        if outcome is Outcome.SUCCEEDED and not self._instant_completed():
            outcome = Outcome.FAILED
        if shadow is not None:  # compared before the task ends: a finished task has its shadow run recorded
            shadow.conclude(stable_succeeded=outcome is Outcome.SUCCEEDED)
        result = self._finish(outcome, tail, error=self._error(outcome, status, tail),
                              conflict=outcome is Outcome.FAILED and status == CONFLICT_EXIT_STATUS)
        if result is Outcome.SUCCEEDED:
            job.log_path.unlink(missing_ok=True)  # its tail is on the attempt
        return result

    # --- before the job -----------------------------------------------------------------------------
    def _prepare(self) -> bool:
        """Roll back a failed earlier attempt of a compaction or clustering left inflight (a clean or
        rollback just runs again), under the table's lock as the writers take it. True if the instant already
        completed (an earlier attempt finished it but could not record it)."""
        c = self.claimed
        if names_request(c.service):  # a backup's, TTL's or archive's: its instant names the request (its job
            # handles retries)
            return False
        require_under_roots(c.base_path, self.settings.storage_roots)
        table = HudiTable.load(c.base_path, context=self.settings.context)
        states = table.timeline.states_of(c.instant)
        if State.COMPLETED in states:
            return True
        # A plan run whole (a restore, an index build) is not an ActionExecutor's: a restore left inflight resumes
        # where it stopped (tms.execute.restore); an indexing rebuilds.
        maps_operations = entry_of(c.service).action_executor is not None
        if maps_operations:
            # Refused here too, before any engine (Hudi's own among them) is given the plan.
            executor_for(table, c.instant).require_plan_inside_table()
        if (State.INFLIGHT in states and maps_operations
                and not executor_for(table, c.instant).resumable_inflight):
            fence = database_fence(self.settings.database, c.task_id, c.fencing_token)
            with TransactionManager.from_options(table, c.concurrency_options) as transactions:
                result = prepare_retry(table, c.instant, LocalRunner(), fence, transactions=transactions)
            log.info("task %s: rolled back the failed attempt: %s", c.task_id, result.summary() if result else "-")
        return False

    def _run_shadow(self, shadow: ShadowAttempt) -> Outcome | None:
        """Run the shadow canary on its scratch copy before the stable engine runs on the table. Its failure is
        recorded and the task goes on; a lost lease or a stop ends the attempt (the outcome)."""
        c = self.claimed
        try:
            on_copy = shadow.prepare()
            job = self._dedicated_job(on_copy, self.settings.log_dir / f"task-{c.task_id}-attempt-{c.attempt}"
                                                                       "-shadow.log")
        except Exception as exc:
            shadow.failed(f"the shadow canary {shadow.engine} cannot start: {exc}")
            return None
        try:
            outcome, status = self._watch(job)
        finally:
            job.kill()
            self._result, self._app_id = None, None  # the canary's, not the attempt's
        if outcome in (Outcome.LEASE_LOST, Outcome.STOPPED):
            shadow.failed(f"the shadow canary {shadow.engine} was stopped: {outcome}")
            return outcome
        if outcome is not Outcome.SUCCEEDED:
            shadow.failed(f"the shadow canary {shadow.engine} failed: "
                          f"{self._error(outcome, status, job.tail())}")
            return None
        job.log_path.unlink(missing_ok=True)
        return None

    def _launch(self) -> JobProcess | WarmPlan:
        c = self.claimed
        url = fence_url(self.settings.service_url, c.task_id, c.fencing_token, c.fence_key)
        log_path = self.settings.log_dir / f"task-{c.task_id}-attempt-{c.attempt}.log"
        engine = self.settings.warm_engines.engine_for(c) if self.settings.warm_engines is not None else None
        if names_request(c.service):
            job = entry_of(c.service).job
            if engine is not None and job in WARM_ENGINE_JOBS and not engine.first_start_pending():
                # A short job that runs often (archival): in the warm engine's driver, without a process start.
                self._record_engine("warm")
                return engine.run(f"task-{c.task_id}-attempt-{c.attempt}", request_arguments(c, fence_url=url),
                                  log_path, job=job)
            self._record_engine("dedicated")
            return JobProcess(*request_job(c, fence_url=url), log_path)
        if engine is not None and engine.first_start_pending():
            # Starting Spark is most of a small plan's time: while the worker's engine first starts, a plan that
            # fits it runs at once as a plain Python job instead of waiting (a restarted engine is waited for).
            log.info("task %s: the warm engine of queue %s is still starting: run as a Python job", c.task_id,
                     c.queue_name)
            self._record_engine("dedicated")
            command, env = python_job(c, fence_url=url)
            return JobProcess(command, env, log_path)
        self._record_engine("warm" if engine is not None else "dedicated")
        if engine is not None:
            return engine.run(f"task-{c.task_id}-attempt-{c.attempt}", plan_arguments(c, fence_url=url), log_path)
        return self._dedicated_job(c, log_path)

    def _dedicated_job(self, c: ClaimedTask, log_path: Path) -> JobProcess:
        """The task's job in a process of its own: Hudi's procedures on a hudi engine's own Spark, else the plain
        Python job, or spark-submit (spark runner)."""
        url = fence_url(self.settings.service_url, c.task_id, c.fencing_token, c.fence_key)
        if c.engine is not None and c.engine.kind == "hudi":
            return JobProcess(*hudi_job(c, fence_url=url), log_path)
        if self.settings.runner == "python":
            command, env = python_job(c, fence_url=url)
        else:
            if self.settings.py_files is None:
                raise ConfigError("the spark runner needs the py-files zip (WorkerSettings.py_files)")
            command, env = spark_job(c, py_files=self.settings.py_files, fence_url=url,
                                     engine_cache=self.settings.log_dir.parent / "engines",
                                     settings_conf=dict(self.settings.settings_conf))
        return JobProcess(command, env, log_path)

    def _record_engine(self, engine_kind: str) -> None:
        c = self.claimed
        with self.settings.database.transaction() as session:
            TaskRepo(session).record_engine(c.task_id, fencing_token=c.fencing_token, engine_kind=engine_kind)

    # --- while it runs ------------------------------------------------------------------------------
    def _watch(self, job: JobProcess | WarmPlan) -> tuple[Outcome, int | None]:
        """Wait for the job, renewing the lease; kill it when it must stop. The outcome and exit status."""
        renew_every = self.settings.lease_seconds / 4
        started = last_renewed = last_attempt = time.monotonic()
        while True:
            status = job.wait(TICK_SECONDS)
            self._read_output(job.new_output())
            if status is not None:
                return (Outcome.SUCCEEDED if status == 0 else Outcome.FAILED), status
            now = time.monotonic()
            if self._stop.is_set():
                job.kill()
                return Outcome.STOPPED, None
            if now - started >= self.settings.timeout_seconds:
                job.kill()
                return Outcome.TIMED_OUT, None
            if now - last_attempt >= renew_every:
                last_attempt = now
                renewed = self._renew()
                if renewed is False or (renewed is None and now - last_renewed >= self.settings.lease_seconds):
                    job.kill()  # cancelled or taken over; or unrenewable for a whole lease, so surely lost
                    return Outcome.LEASE_LOST, None
                if renewed:
                    last_renewed = now

    def _renew(self) -> bool | None:
        """True: renewed; False: the lease is lost; None: the database could not be asked."""
        c = self.claimed
        try:
            with self.settings.database.transaction() as session:
                return TaskRepo(session).renew_lease(c.task_id, fencing_token=c.fencing_token,
                                                     lease_seconds=self.settings.lease_seconds)
        except Exception as exc:  # a database outage: keep the job while the lease may still hold
            log.warning("task %s: cannot renew the lease: %s", c.task_id, exc)
            return None

    def _read_output(self, new_output: str) -> None:
        self._result = find_result(new_output) or self._result
        self._record_app_id(new_output)

    def _record_app_id(self, new_output: str) -> None:
        if self._app_id is not None:
            return
        self._app_id = find_app_id(new_output)
        if self._app_id is None:
            return
        c = self.claimed
        try:
            with self.settings.database.transaction() as session:
                TaskRepo(session).record_spark_app(c.task_id, fencing_token=c.fencing_token,
                                                   spark_app_id=self._app_id)
        except Exception as exc:  # only a record: the job goes on
            log.warning("task %s: cannot record Spark application %s: %s", c.task_id, self._app_id, exc)

    # --- after it -----------------------------------------------------------------------------------
    def _instant_completed(self) -> bool:
        if names_request(self.claimed.service):  # done when its job reported what it did
            return self._result is not None
        table = HudiTable.load(self.claimed.base_path, context=self.settings.context)
        return State.COMPLETED in table.timeline.states_of(self.claimed.instant)

    def _error(self, outcome: Outcome, status: int | None, tail: str) -> str | None:
        if outcome is Outcome.SUCCEEDED:
            return None
        if outcome is Outcome.TIMED_OUT:
            return f"the job ran past its timeout of {self.settings.timeout_seconds:.0f} s and was killed"
        if outcome is Outcome.STOPPED:
            return "the worker stopped; the job was killed"
        if outcome is Outcome.LEASE_LOST:
            return "the job was killed: its lease was lost (cancelled, or taken over)"
        if status is None:
            return "the job ended without an exit status"
        if status == 0:
            return f"the job exited but {self.claimed.instant} is not completed"
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        reason = last_error_line(tail)
        return f"the job {how}" + (f": {reason}" if reason else "")

    def _finish(self, outcome: Outcome, tail: str, error: str | None, *, conflict: bool = False) -> Outcome:
        """Record the outcome; a task that left RUNNING meanwhile (cancelled, taken over) keeps its state,
        and only the log tail is added to the attempt. `conflict`: the job gave way to a conflicting write.
        The attempt's fence key is hidden wherever the error or the tail shows it (its command line, a fence URL)."""
        c = self.claimed
        tail = redact_fence_keys(tail, c.fence_key)
        error = None if error is None else redact_fence_keys(error, c.fence_key)
        with self.settings.database.transaction() as session:
            tasks = TaskRepo(session)
            finished = None
            if outcome is not Outcome.LEASE_LOST:
                failure = None if outcome is Outcome.SUCCEEDED else classify(
                    timed_out=outcome is Outcome.TIMED_OUT, stopped=outcome is Outcome.STOPPED, conflict=conflict,
                    error=error,
                    tail=tail, attempts_in_series=c.attempts_in_series, limits=self.settings.retry_limits)
                finished = tasks.finish(c.task_id, fencing_token=c.fencing_token,
                                        succeeded=outcome is Outcome.SUCCEEDED, error=error, log_tail=tail,
                                        failure=failure, result=self._result)
            if finished is None:  # the lease was lost: the task's state is someone else's now
                tasks.annotate_attempt(c.task_id, fencing_token=c.fencing_token, log_tail=tail, error=error,
                                       result=self._result)
                outcome = Outcome.LEASE_LOST
        log.info("task %s: %s %s %s%s", c.task_id, c.service, c.instant, outcome, f" ({error})" if error else "")
        return outcome
