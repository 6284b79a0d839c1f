"""Runs an executor's tasks as Spark tasks, results collected on the driver: one Spark task per task, or, given
their sizes, one per part of them cut by bytes (tms.execute.parts), which Spark attempts again alone when it
fails (spark.task.maxFailures; on a local master, its `local[N,F]` form)."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from pyspark import SparkConf, SparkContext, TaskContext

from tms.config import Settings
from tms.execute.parts import DEFAULT_PART_BYTES, cut_into_parts
from tms.execute.runner import TaskFunction
from tms.hudi.fs_view.file_names import write_token
from tms.storage_roots import hadoop_secrets


def driver_conf(app_name: str, settings: Settings) -> SparkConf:
    """The SparkConf of a job's driver, with each storage root's credentials for Hadoop's connectors and the
    executors (`tms.storage_roots.hadoop_secrets`): set here, in the driver, never on spark-submit's command
    line, where any user of the machine could read them."""
    return SparkConf().setAppName(app_name).setAll(list(hadoop_secrets(settings.storage_root_options).items()))


def _attempt_token() -> str:
    ctx = TaskContext.get()  # each attempt of a Spark task names its files apart (Hudi's write token)
    if ctx is None:
        raise RuntimeError("a task function runs inside a Spark task")
    return write_token(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId())


def _with_write_token(fn: TaskFunction, task: Any) -> Any:
    return fn(task, _attempt_token())


def _run_part(fn: TaskFunction, part: list[Any]) -> list[Any]:
    token = _attempt_token()  # the part's files differ by their file ids, as a Spark task's files in Hudi
    return [fn(task, token) for task in part]


class SparkRunner:
    def __init__(self, sc: SparkContext, part_bytes: int = DEFAULT_PART_BYTES):
        self.sc, self.part_bytes = sc, part_bytes

    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str = "",
            sizes: Sequence[int] | None = None) -> list[Any]:
        if not tasks:
            return []
        self.sc.setJobDescription(description)
        if sizes is None:
            return self.sc.parallelize(list(tasks), len(tasks)).map(partial(_with_write_token, fn)).collect()
        parts = [[tasks[i] for i in part] for part in
                 cut_into_parts(sizes, self.part_bytes, self.sc.defaultParallelism)]
        return self.sc.parallelize(parts, len(parts)).flatMap(partial(_run_part, fn)).collect()
