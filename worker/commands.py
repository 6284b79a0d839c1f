"""The command line and environment of a claimed task's job: spark-submit of `jobs/run.py` to the queue's
master with the job's sizing, or the plain Python job (jobs.python_job); the arguments a plan is handed to a
warm engine with."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from tms.execute.engine_code import engine_job_files, python_job_command
from tms.execute.hudi_engine import hudi_job_command
from tms.execute.spark_submit import spark_submit_command, spark_submit_env
from tms.table_services import entry_of

from .claim import ClaimedTask


def spark_job(claimed: ClaimedTask, *, py_files: Path, fence_url: str,
              engine_cache: Path | None = None,
              settings_conf: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """With an engine (and `engine_cache`, where its code's py-files are built): the engine's spark-submit,
    code and confs; the queue's own confs (YARN queue, Kubernetes namespace, ...) go over the engine's, and
    the sizing decides the resources."""
    engine = claimed.engine
    entry = None
    if engine is not None and engine_cache is not None:
        py_files, entry = engine_job_files(engine, engine_cache)
    conf = {**(engine.spark_conf if engine else {}), **claimed.queue_spark_conf,
            **claimed.resources.spark_conf(claimed.queue_kind)}
    command = spark_submit_command(claimed.base_path, claimed.instant, py_files=py_files, master=claimed.master,
                                   conf=conf, service=claimed.service, fence_url=fence_url,
                                   options=claimed.job_options,
                                   spark_submit=engine.spark_submit if engine else None, entry=entry,
                                   settings_conf=settings_conf)
    env = spark_submit_env(claimed.master)
    if engine is not None and engine.spark_submit:  # the engine's distribution, not the worker's
        env["SPARK_HOME"] = str(Path(engine.spark_submit).resolve().parent.parent)
    return command, env


def hudi_job(claimed: ClaimedTask, *, fence_url: str) -> tuple[list[str], dict[str, str]]:
    """A Hudi engine's job, whatever the worker's runner: Hudi's procedures on the engine's Spark, with the
    engine's confs (its Hudi bundle) under the queue's and the sizing's; the table's lock options go to Hudi.
    ConfigError (one line, nothing launched) for a service Hudi cannot execute from TMS's plan."""
    engine = claimed.engine
    if engine is None or engine.spark_submit is None:
        raise ValueError("a Hudi engine's job needs the engine's spark-submit")
    conf = {**engine.spark_conf, **claimed.queue_spark_conf, **claimed.resources.spark_conf(claimed.queue_kind)}
    return hudi_job_command(spark_submit=engine.spark_submit, table_path=claimed.base_path, instant=claimed.instant,
                            service=claimed.service, master=claimed.master, conf=conf, fence_url=fence_url,
                            options=claimed.job_options)


def plan_arguments(claimed: ClaimedTask, *, fence_url: str) -> list[str]:
    """The arguments of jobs/run.py (and of the plain Python job, and of a plan on a warm engine)."""
    arguments = ["--table", claimed.base_path, "--instant", claimed.instant, "--action", claimed.service,
                 "--fence-url", fence_url]
    for key, value in claimed.job_options.items():
        arguments += ["--option", f"{key}={value}"]
    return arguments


def request_job(claimed: ClaimedTask, *, fence_url: str) -> tuple[list[str], dict[str, str]]:
    """The job of a task that names its request (a backup's, a TTL's, an archival's: its registry entry's `job`),
    whatever the worker's runner: it runs in a Python process of its own (it copies files, deletes, or moves
    instant files: Spark adds nothing), handed the task's plan and, if it takes them, the table's lock options."""
    module = entry_of(claimed.service).job
    if module is None:
        raise ValueError(f"a {claimed.service} task runs its plan's job, not a job of its own")
    return [sys.executable, "-m", module, *request_arguments(claimed, fence_url=fence_url)], dict(os.environ)


def request_arguments(claimed: ClaimedTask, *, fence_url: str) -> list[str]:
    """The arguments of a request's job (its module's main(argv)): in a process of its own, or on a warm engine."""
    entry = entry_of(claimed.service)
    args = ["--table", claimed.base_path, "--instant", claimed.instant, "--action", claimed.service,
            "--plan", claimed.plan.model_dump_json(exclude_unset=True), "--fence-url", fence_url]
    for key, value in claimed.concurrency_options.items() if entry.job_lock_options else ():
        args += ["--option", f"{key}={value}"]
    return args


def python_job(claimed: ClaimedTask, *, fence_url: str) -> tuple[list[str], dict[str, str]]:
    if claimed.engine is not None:  # the engine's job code
        return python_job_command(claimed.engine, plan_arguments(claimed, fence_url=fence_url))
    command = [sys.executable, "-m", "jobs.python_job", *plan_arguments(claimed, fence_url=fence_url)]
    return command, dict(os.environ)
