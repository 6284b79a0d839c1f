"""The command line and environment of a claimed task's job: spark-submit of `jobs/run.py` to the queue's
master with the job's sizing, or the plain Python job (jobs.python_job); the arguments a plan is handed to a
warm engine with."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from tms.execute.spark_submit import spark_submit_command, spark_submit_env

from .claim import ClaimedTask


def spark_job(claimed: ClaimedTask, *, py_files: Path, fence_url: str) -> tuple[list[str], dict[str, str]]:
    # The queue's own confs (YARN queue, Kubernetes namespace, ...) first; the sizing decides the resources.
    conf = {**claimed.queue_spark_conf, **claimed.resources.spark_conf(claimed.queue_kind)}
    command = spark_submit_command(claimed.base_path, claimed.instant, py_files=py_files, master=claimed.master,
                                   conf=conf, action=claimed.action, fence_url=fence_url,
                                   options=claimed.concurrency_options)
    return command, spark_submit_env(claimed.master)


def plan_arguments(claimed: ClaimedTask, *, fence_url: str) -> list[str]:
    """The arguments of jobs/run.py (and of the plain Python job, and of a plan on a warm engine)."""
    args = ["--table", claimed.base_path, "--instant", claimed.instant, "--action", claimed.action,
            "--fence-url", fence_url]
    for key, value in claimed.concurrency_options.items():  # the table's lock
        args += ["--option", f"{key}={value}"]
    return args


def python_job(claimed: ClaimedTask, *, fence_url: str) -> tuple[list[str], dict[str, str]]:
    command = [sys.executable, "-m", "jobs.python_job", *plan_arguments(claimed, fence_url=fence_url)]
    return command, dict(os.environ)
