"""A big plan's operations cut into parts by the bytes they read: a part is one task of the runner (a Spark
task), which runs its operations one after the other, each within the merge's memory budget. A failed part is
attempted again alone (spark.task.maxFailures), so a failure costs a part, not the whole plan; and a plan of
100,000 operations is a few hundred parts, not 100,000 tasks for the driver to schedule and track."""
from __future__ import annotations

from collections.abc import Sequence

# The bytes one part reads at most by default (TMS_WORKER_PART_BYTES): 1 MiB, each operation a part of its own
# (as before parts), until a Python worker left running a part after its executor died is stopped between two
# operations (a warm engine killed mid-plan once left a base file written after its attempt's rollback).
DEFAULT_PART_BYTES = 1024 * 1024
# What an operation counts for at least: one of a plan's many small (or unmeasured) operations still costs a
# file open and a write, so a part never holds more than part_bytes / this of them.
MIN_OPERATION_BYTES = 1024 * 1024


def cut_into_parts(sizes: Sequence[int], part_bytes: int, parallelism: int = 1) -> list[range]:
    """The operations (by index, in order) of each part: consecutive operations while their bytes stay within a
    part's budget, the smaller of `part_bytes` and an even share of `parallelism` parts, so that a small plan
    still uses every task slot. An operation bigger than the budget is a part alone."""
    if not sizes:
        return []
    weights = [max(int(s), MIN_OPERATION_BYTES) for s in sizes]
    budget = max(1, min(part_bytes, -(-sum(weights) // max(1, parallelism))))
    parts, start, filled = [], 0, 0
    for i, weight in enumerate(weights):
        if i > start and filled + weight > budget:
            parts.append(range(start, i))
            start, filled = i, 0
        filled += weight
    parts.append(range(start, len(weights)))
    return parts
