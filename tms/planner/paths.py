"""Absolute paths as Hudi's plans record them, and back to paths relative to the table."""
from __future__ import annotations

from .errors import PlannerError


def full_path(table, rel: str) -> str:
    return f"{table.base_path}/{rel}" if rel else table.base_path


def _without_local_scheme(path: str) -> str:
    # Java writes local paths as `file:/x` or plain `/x`, depending on where the path came from.
    for prefix in ("file://", "file:"):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def relative_path(table, path: str) -> str:
    """`path` (absolute, as in clustering, clean and rollback plans, or already relative) relative to the
    table's base path. Raises PlannerError for a path outside the table."""
    base = _without_local_scheme(table.base_path).rstrip("/")
    local = _without_local_scheme(path)
    if local.startswith(base + "/"):
        return local[len(base) + 1:]
    if "://" not in local and not local.startswith("/"):
        return local
    raise PlannerError(f"{path} is not inside the table at {table.base_path}")
