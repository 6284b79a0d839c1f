"""Runners: where an executor's tasks run. A task function takes (task, write token) and returns a
picklable result; the write token names the files a task attempt writes (`<partition>-<stage>-<attempt>`,
as Hudi's write tokens), so that two attempts of one task never write the same file."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

from tms.hudi.fs_view.file_names import write_token

from .errors import ExecutionError

log = logging.getLogger(__name__)

TaskFunction = Callable[[Any, str], Any]


class Runner(Protocol):
    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str,
            sizes: Sequence[int] | None = None) -> list[Any]:
        """fn(task, write_token) for every task; results in task order. `sizes`: the bytes each task reads, by
        which a distributed runner cuts the tasks into parts (tms.execute.parts)."""


class LocalRunner:
    """Runs tasks in this process, in threads (pyarrow releases the GIL while it decodes and encodes). A task that
    fails is attempted again alone, up to `attempts` times in all (TMS_WORKER_TASK_MAX_FAILURES, as Spark's
    spark.task.maxFailures), each attempt's files named apart by its write token; the executor deletes a failed
    attempt's files through their markers before the instant completes. TMS's own refusals and stops
    (ExecutionError: an unsafe plan, a lost lease) are not attempted again."""

    def __init__(self, parallelism: int | None = None, attempts: int = 1):
        self.parallelism = max(1, parallelism or os.cpu_count() or 1)
        self.attempts = max(1, attempts)

    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str = "",
            sizes: Sequence[int] | None = None) -> list[Any]:
        # in one process, the threads take the tasks one at a time: parts would change nothing
        run = partial(self._attempted, fn, description)
        if self.parallelism == 1 or len(tasks) <= 1:
            return [run(i, task) for i, task in enumerate(tasks)]
        with ThreadPoolExecutor(self.parallelism) as pool:
            return list(pool.map(lambda it: run(*it), enumerate(tasks)))

    def _attempted(self, fn: TaskFunction, description: str, index: int, task: Any) -> Any:
        for attempt in range(self.attempts):
            try:
                return fn(task, write_token(index, 0, attempt))
            except ExecutionError:
                raise
            except Exception as exc:
                if attempt + 1 >= self.attempts:
                    raise
                log.warning("%s: task %s failed (attempt %s of %s), attempted again: %s", description or "tasks", index,
                            attempt + 1, self.attempts, exc)
        raise AssertionError("unreachable: the last attempt returns or raises")
