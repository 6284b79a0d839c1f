"""How figures are shown to people, alike on the dashboard and in the CLI: times in one zone, labelled (UTC),
durations below a second in milliseconds, sizes with units, booleans as yes/no, and a plan's statistics as a
summary (operations, total, largest) rather than the list of every operation's bytes."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

ZONE = "UTC"
_UNITS = ("B", "KB", "MB", "GB", "TB")


def size(n: float | None) -> str:
    """Bytes with a unit: 512 B, 3.4 KB, 1.2 GB (1 KB = 1024 B)."""
    value = float(n or 0)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def duration(seconds: float) -> str:
    """850 ms, 14 s, 3m 05s, 2h 10m."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def moment(value: datetime | str | None) -> str:
    """A time in UTC, labelled: `2026-11-26 06:44:08 UTC` (a time without a zone is taken as UTC); `-` for
    none; an unreadable string as it is."""
    if value is None or value == "":
        return "-"
    if isinstance(value, datetime):
        at = value
    else:
        try:
            at = datetime.fromisoformat(value)
        except ValueError:
            return value
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M:%S} {ZONE}"


def yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def plan_summary(stats: dict[str, Any] | None) -> str:
    """`3 operations, 12.4 MB in all, the largest file group 5.1 MB`, from a task's plan statistics."""
    if not stats:
        return "no statistics"
    operations = int(stats.get("operations") or len(stats.get("operation_bytes") or []))
    total = stats.get("total_bytes")
    if total is None:
        total = sum(stats.get("operation_bytes") or [])
    text = f"{operations} operation{'' if operations == 1 else 's'}, {size(total)} in all"
    largest = stats.get("largest_file_group_bytes")
    if largest:
        text += f", the largest file group {size(largest)}"
    return text


def operation_sizes(stats: dict[str, Any] | None) -> list[str]:
    """Each operation's bytes, with units (the raw list behind the summary)."""
    return [size(n) for n in (stats or {}).get("operation_bytes") or []]
