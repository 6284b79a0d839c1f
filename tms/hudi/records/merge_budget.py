"""The memory budget of a merge (compaction, clustering): Hudi's `hoodie.memory.compaction.max.size` (bytes),
else its `hoodie.memory.compaction.fraction` of the executor's memory where that is known, else TMS's default
(the setting TMS_MERGE_MEMORY_BYTES). Options given to the job win over the table's properties."""
from __future__ import annotations

from collections.abc import Mapping

from ..errors import HudiError

MAX_SIZE = "hoodie.memory.compaction.max.size"
FRACTION = "hoodie.memory.compaction.fraction"
MEMORY_OPTIONS = (MAX_SIZE, FRACTION)
DEFAULT_BYTES = 256 * 1024 * 1024
MIN_BYTES = 16 * 1024 * 1024  # below this the merge spends its time spilling


class MergeBudgetError(HudiError):
    """A memory option that is not a number in range."""


def is_memory_option(key: str) -> bool:
    return key in MEMORY_OPTIONS


def merge_budget_bytes(options: Mapping[str, str], table_properties: Mapping[str, str] | None = None,
                       default: int = DEFAULT_BYTES, executor_memory_bytes: int | None = None) -> int:
    """The budget in bytes (at least MIN_BYTES); a malformed value is refused in one line."""
    sources = [options, table_properties or {}]
    for source in sources:
        if source.get(MAX_SIZE):
            return max(MIN_BYTES, _positive_int(MAX_SIZE, source[MAX_SIZE]))
    if executor_memory_bytes:
        for source in sources:
            if source.get(FRACTION):
                return max(MIN_BYTES, int(executor_memory_bytes * _fraction(source[FRACTION])))
    return max(MIN_BYTES, default)


def _positive_int(key: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise MergeBudgetError(f"{key}={value} is not a number of bytes") from None
    if number <= 0:
        raise MergeBudgetError(f"{key}={value} is not a positive number of bytes")
    return number


def _fraction(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise MergeBudgetError(f"{FRACTION}={value} is not a fraction") from None
    if not 0 < number <= 1:
        raise MergeBudgetError(f"{FRACTION}={value} is not a fraction in (0, 1]")
    return number
