"""Sizing a job from its plan: executor memory follows the largest file group (one Spark task holds a whole
file group's base and log files in memory while it merges them), parallelism follows the operations."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from tms.db import ResourceQueue

MEMORY_FACTOR = 1.4  # decoded rows, the merge and the written file take more than the bytes on storage
MB = 1024 * 1024


@dataclass(frozen=True)
class JobResources:
    executor_memory_mb: int
    executors: int
    executor_cores: int
    driver_memory_mb: int
    driver_cores: int
    largest_file_group_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def spark_conf(self, queue_kind: str) -> dict[str, str]:
        """The confs spark-submit gets for these resources on a queue of `queue_kind`."""
        conf = {"spark.executor.memory": f"{self.executor_memory_mb}m",
                "spark.executor.cores": str(self.executor_cores),
                "spark.executor.instances": str(self.executors),
                "spark.dynamicAllocation.maxExecutors": str(self.executors),
                "spark.driver.memory": f"{self.driver_memory_mb}m",
                "spark.driver.cores": str(self.driver_cores)}
        if queue_kind == "standalone":  # a standalone master grants cores, not executor instances
            conf["spark.cores.max"] = str(self.executors * self.executor_cores)
        return conf


def size_job(plan_stats: Mapping[str, Any], queue: ResourceQueue, *, driver_memory_mb: int, driver_cores: int,
             max_executors_per_table: int, memory_factor: float = 1.0) -> JobResources:
    """Executor memory = largest file group x 1.4 (x `memory_factor`, which grows 1.5x with each attempt that
    ran out of memory), within the queue's bounds; one executor per operation, within the queue's and the
    per-table cap. `plan_stats` is what the planner recorded (PlanStats)."""
    largest = int(plan_stats.get("largest_file_group_bytes") or 0)
    operations = int(plan_stats.get("operations") or 1)
    memory_mb = math.ceil(largest * MEMORY_FACTOR / MB)
    if memory_factor > 1:  # grow from what the last attempt had, at least the queue's minimum
        memory_mb = math.ceil(max(memory_mb, queue.min_executor_memory_mb) * memory_factor)
    memory_mb = min(max(memory_mb, queue.min_executor_memory_mb), queue.max_executor_memory_mb)
    executors = max(1, min(operations, queue.max_executors, max_executors_per_table))
    return JobResources(executor_memory_mb=memory_mb, executors=executors, executor_cores=queue.executor_cores,
                        driver_memory_mb=driver_memory_mb, driver_cores=driver_cores,
                        largest_file_group_bytes=largest)
