"""Runners: where an executor's tasks run. A task function takes (task, write token) and returns a
picklable result; the write token names the files a task attempt writes (`<partition>-<stage>-<attempt>`,
as Hudi's write tokens), so that two attempts of one task never write the same file."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from tms.hudi.fs_view.file_names import write_token

TaskFunction = Callable[[Any, str], Any]


class Runner(Protocol):
    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str,
            sizes: Sequence[int] | None = None) -> list[Any]:
        """fn(task, write_token) for every task; results in task order. `sizes`: the bytes each task reads, by
        which a distributed runner cuts the tasks into parts (tms.execute.parts)."""


class LocalRunner:
    """Runs tasks in this process, in threads (pyarrow releases the GIL while it decodes and encodes)."""

    def __init__(self, parallelism: int | None = None):
        self.parallelism = max(1, parallelism or os.cpu_count() or 1)

    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str = "",
            sizes: Sequence[int] | None = None) -> list[Any]:
        # in one process, the threads take the tasks one at a time: parts would change nothing
        if self.parallelism == 1 or len(tasks) <= 1:
            return [fn(task, write_token(i)) for i, task in enumerate(tasks)]
        with ThreadPoolExecutor(self.parallelism) as pool:
            return list(pool.map(lambda it: fn(it[1], write_token(it[0])), enumerate(tasks)))
