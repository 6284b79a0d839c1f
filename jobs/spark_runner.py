"""Runs an executor's tasks as Spark tasks: one partition per task, results collected on the driver."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from pyspark import SparkConf, SparkContext, TaskContext

from tms.config import Settings
from tms.execute.runner import TaskFunction
from tms.hudi.fs_view.file_names import write_token
from tms.storage_roots import hadoop_secrets


def driver_conf(app_name: str, settings: Settings) -> SparkConf:
    """The SparkConf of a job's driver, with each storage root's credentials for Hadoop's connectors and the
    executors (`tms.storage_roots.hadoop_secrets`): set here, in the driver, never on spark-submit's command
    line, where any user of the machine could read them."""
    return SparkConf().setAppName(app_name).setAll(list(hadoop_secrets(settings.storage_root_options).items()))


def _with_write_token(fn: TaskFunction, task: Any) -> Any:
    ctx = TaskContext.get()  # each attempt of a Spark task names its files apart (Hudi's write token)
    if ctx is None:
        raise RuntimeError("a task function runs inside a Spark task")
    return fn(task, write_token(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId()))


class SparkRunner:
    def __init__(self, sc: SparkContext):
        self.sc = sc

    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str = "") -> list[Any]:
        if not tasks:
            return []
        self.sc.setJobDescription(description)
        return self.sc.parallelize(list(tasks), len(tasks)).map(partial(_with_write_token, fn)).collect()
