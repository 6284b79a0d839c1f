"""Sizing a job from its plan: executor memory follows the largest file group (one Spark task holds a whole
file group's base and log files in memory while it merges them), parallelism follows the operations. A
compaction merges a file group within its memory budget (hoodie.memory.compaction.max.size, TMS_MERGE_MEMORY_BYTES;
see tms.hudi.records.bounded_merge): with a budget, its memory follows the budget once the file group outgrows it.

The merge runs in the executors' Python workers, outside the JVM heap that `spark.executor.memory` sizes. On
YARN and Kubernetes a Python worker's memory counts against the container's `spark.executor.memoryOverhead`,
and a worker past it gets the container killed: the overhead is sized for the Python workers (one per core)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from tms.db import QueueRecord
from tms.table_service import TableService
from tms.table_services import entry_of
from tms.task_payload import PlanStatistics

MEMORY_FACTOR = 1.4  # decoded rows, the merge and the written file take more than the bytes on storage
MB = 1024 * 1024
# A Python worker's peak while it merges one operation's files: the interpreter with pyarrow and the format
# library loaded (~170 MB), plus the decoded base rows, log records, merged rows and written file: measured
# at 20-28x the bytes on storage for the benchmark's table, the higher end for a worker that merged several
# file groups in turn (tests/worker/test_worker_python_memory.py checks the estimate covers it).
PYTHON_BASE_MB = 256
PYTHON_MEMORY_FACTOR = 32
# A Python worker compacting within a budget: the base plus this many budgets covers the peaks measured (1,504 MB
# for a 0.9 GB file group within 256 MB, 609 MB for a 59 MB one: bench/merge_memory.py); the peak still grows
# slowly with the group (spill buckets, a log block's bytes). tests/execute/test_compaction_memory.py checks it.
PYTHON_BUDGET_FACTOR = 6
SPARK_MIN_OVERHEAD_MB = 384  # Spark's own minimum executor overhead, for the JVM's off-heap memory


@dataclass(frozen=True)
class JobResources:
    executor_memory_mb: int
    executors: int
    executor_cores: int
    driver_memory_mb: int
    driver_cores: int
    largest_file_group_bytes: int
    python_memory_mb: int = 0  # the executor's Python workers together (0: not sized, Spark's default overhead)

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
        if self.python_memory_mb:
            conf["spark.executor.memoryOverhead"] = f"{self.python_memory_mb + SPARK_MIN_OVERHEAD_MB}m"
        if queue_kind == "standalone":  # a standalone master grants cores, not executor instances
            conf["spark.cores.max"] = str(self.executors * self.executor_cores)
        return conf


def size_job(stats: PlanStatistics, queue: QueueRecord, *, driver_memory_mb: int, driver_cores: int,
             max_executors_per_table: int, memory_factor: float = 1.0, service: str = TableService.COMPACTION,
             budget_bytes: int | None = None) -> JobResources:
    """Executor memory = largest file group x 1.4 (x `memory_factor`, which grows 1.5x with each attempt that
    ran out of memory), within the queue's bounds; one executor per operation, within the queue's and the
    per-table cap. The Python workers' memory follows the largest operation a task merges (a file group, a
    clustering group), grows with `memory_factor` too and stays within the queue's maximum.
    `stats` is what the planner recorded (PlanStats). With `budget_bytes` (the merge budget) the memory of a
    compaction or clustering whose merges stream within it (`within_budget`) follows the budget where the
    largest operation is bigger."""
    largest = stats.largest_file_group_bytes or 0
    entry = entry_of(service)
    # Stats recorded before `within_budget` existed: compactions were merged within the budget, clustering not.
    within_budget = stats.within_budget if stats.within_budget is not None else entry.within_budget_by_default
    bounded = budget_bytes if entry.merges and within_budget else None
    operations = stats.operations or 1
    memory_mb = math.ceil(min(largest, bounded or largest) * MEMORY_FACTOR / MB)
    if memory_factor > 1:  # grow from what the last attempt had, at least the queue's minimum
        memory_mb = math.ceil(max(memory_mb, queue.min_executor_memory_mb) * memory_factor)
    memory_mb = min(max(memory_mb, queue.min_executor_memory_mb), queue.max_executor_memory_mb)
    executors = max(1, min(operations, queue.max_executors, max_executors_per_table))
    return JobResources(executor_memory_mb=memory_mb, executors=executors, executor_cores=queue.executor_cores,
                        driver_memory_mb=driver_memory_mb, driver_cores=driver_cores,
                        largest_file_group_bytes=largest,
                        python_memory_mb=_python_memory_mb(stats, service, queue, memory_factor, bounded))


def python_task_memory_mb(operation_bytes: int, budget_bytes: int | None = None) -> int:
    """What one Python worker needs to merge an operation of `operation_bytes` on storage (within
    `budget_bytes`, when the merge has one)."""
    merge_bytes = operation_bytes * PYTHON_MEMORY_FACTOR
    if budget_bytes is not None:
        merge_bytes = min(merge_bytes, budget_bytes * PYTHON_BUDGET_FACTOR)
    return PYTHON_BASE_MB + math.ceil(merge_bytes / MB)


def _python_memory_mb(stats: PlanStatistics, service: str, queue: QueueRecord,
                      memory_factor: float, budget_bytes: int | None = None) -> int:
    merged = 0
    if entry_of(service).merges:  # a task merges a whole operation: a file group, or a clustering group
        # (a clean or a rollback only deletes files)
        merged = max([stats.largest_file_group_bytes or 0, *stats.operation_bytes])
    per_executor = python_task_memory_mb(merged, budget_bytes) * queue.executor_cores
    return min(math.ceil(per_executor * memory_factor), queue.max_executor_memory_mb)
