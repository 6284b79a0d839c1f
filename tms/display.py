"""How figures are shown to people, alike on the dashboard and in the CLI: times in one zone, labelled
(`TMS_DISPLAY_TIMEZONE`, UTC by default), durations below a second in milliseconds, sizes with units, booleans
as yes/no, and a plan's statistics as a summary (operations, total, largest, a histogram of sizes) rather than
the list of every operation's bytes."""
from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tms.errors import ConfigError
from tms.hudi.timeline.instant import instant_to_datetime, is_valid_instant_time

ZONE_ENV = "TMS_DISPLAY_TIMEZONE"
DEFAULT_ZONE = "UTC"
_UNITS = ("B", "KB", "MB", "GB", "TB")
_MB = 1024 * 1024
# Upper bounds of the plan-size histogram's buckets (the last is open).
_BUCKETS = ((_MB, "< 1 MB"), (10 * _MB, "1-10 MB"), (100 * _MB, "10-100 MB"), (1024 * _MB, "100 MB-1 GB"),
            (None, ">= 1 GB"))


@cache
def _zone_named(name: str) -> tzinfo:
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"{ZONE_ENV}={name} is not a time zone (an IANA name such as Europe/Paris, or UTC)"
                          ) from None


def zone_name() -> str:
    """The zone times are shown in: `TMS_DISPLAY_TIMEZONE`, UTC when unset."""
    return os.environ.get(ZONE_ENV) or DEFAULT_ZONE


def check_zone(name: str) -> str:
    """`name` if it is a zone times can be shown in, else ConfigError (one line)."""
    _zone_named(name)
    return name


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


def local(at: datetime) -> datetime:
    """An aware time in the display zone (a naive one is taken as UTC)."""
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(_zone_named(zone_name()))


def zone_label(at: datetime | None = None) -> str:
    """`UTC`, or the zone's abbreviation at `at` (now by default) and its name: `CET (Europe/Paris)`."""
    name = zone_name()
    zone = _zone_named(name)
    if zone is UTC:
        return "UTC"
    return f"{(at or datetime.now(UTC)).astimezone(zone).tzname()} ({name})"


def moment(value: datetime | str | None) -> str:
    """A time in the display zone, labelled: `2026-11-26 06:44:08 UTC`, `2026-11-26 07:44:08 CET
    (Europe/Paris)` (a time without a zone is taken as UTC); `-` for none; an unreadable string as it is."""
    if value is None or value == "":
        return "-"
    if isinstance(value, datetime):
        at = value
    else:
        try:
            at = datetime.fromisoformat(value)
        except ValueError:
            return value
    return f"{local(at):%Y-%m-%d %H:%M:%S} {zone_label(at)}"


def age(at: datetime, now: datetime | None = None) -> str:
    """How long ago `at` was: `just now`, `14 s ago`, `3m 05s ago`, `2h 10m ago`, `3 days ago`."""
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - at).total_seconds()
    if seconds < 1:
        return "just now"
    if seconds >= 2 * 86400:
        return f"{int(seconds // 86400)} days ago"
    return f"{duration(seconds)} ago"


def moment_and_age(value: datetime | str | None, now: datetime | None = None) -> str:
    """A time as `moment` shows it, and its age: `2026-11-28 16:22:38 UTC (3m 05s ago)`."""
    shown = moment(value)
    try:
        at = value if isinstance(value, datetime) else datetime.fromisoformat(value or "")
    except ValueError:
        return shown
    return f"{shown} ({age(at, now)})"


def instant(ts: str | None, zone: tzinfo = UTC, now: datetime | None = None) -> str:
    """A Hudi instant time (yyyyMMddHHmmssSSS, a wall-clock time in the timeline's `zone`) as a time with its
    zone and age: `2026-11-28 16:22:38 UTC (3m 05s ago)`; a string that is no instant time as it is."""
    if not ts or not is_valid_instant_time(ts):
        return ts or "-"
    try:
        at = instant_to_datetime(ts, zone)
    except ValueError:
        return ts
    return moment_and_age(at, now)


def resources(asked: dict[str, Any] | None) -> str:
    """A job's requested resources in words: `2 executors of 1 core and 1.0 GB, driver 1 core and 1.0 GB; the
    largest file group 704.7 KB`."""
    if not asked:
        return "-"
    parts = []
    if "executors" in asked:
        n = int(asked["executors"])
        parts.append(f"{n} executor{'' if n == 1 else 's'} of {_cores(asked.get('executor_cores'))}"
                     f"{size(int(asked.get('executor_memory_mb') or 0) * _MB)}")
    if "driver_memory_mb" in asked:
        parts.append(f"driver {_cores(asked.get('driver_cores'))}{size(int(asked['driver_memory_mb']) * _MB)}")
    text = ", ".join(parts)
    if asked.get("largest_file_group_bytes"):
        text += f"; the largest file group {size(asked['largest_file_group_bytes'])}"
    known = {"executors", "executor_cores", "executor_memory_mb", "driver_cores", "driver_memory_mb",
             "largest_file_group_bytes"}
    rest = ", ".join(f"{k} {v}" for k, v in asked.items() if k not in known)
    return "; ".join(t for t in (text, rest) if t) or "-"


def _cores(n: Any) -> str:
    return "" if n is None else f"{n} core{'' if int(n) == 1 else 's'} and "


def policy_value(key: str, value: Any) -> Any:
    """A policy option's value for people: sizes with units (`hoodie.parquet.max.file.size` 125829120 ->
    `120.0 MB`); the rest as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    # Imported here: tms.config imports this module, and the health probe (deploy/healthcheck.py) imports
    # tms.config every few seconds; tms.planning brings the whole format library (polars, pyarrow) with it.
    from tms.planning.policy import BYTE_SIZE_OPTIONS, MEGABYTE_SIZE_OPTIONS
    if key in BYTE_SIZE_OPTIONS:
        return size(value)
    if key in MEGABYTE_SIZE_OPTIONS:
        return size(value * _MB)
    return value


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


def size_histogram(stats: dict[str, Any] | None) -> list[tuple[str, int]]:
    """How many of a plan's operations fall in each size bucket (< 1 MB, 1-10 MB, ...), the empty ones left out."""
    counts = [0] * len(_BUCKETS)
    for n in (stats or {}).get("operation_bytes") or []:
        counts[next(i for i, (bound, _) in enumerate(_BUCKETS) if bound is None or n < bound)] += 1
    return [(label, count) for (_, label), count in zip(_BUCKETS, counts, strict=True) if count]


def operation_sizes(stats: dict[str, Any] | None) -> list[str]:
    """Each operation's bytes, with units (the raw list behind the summary)."""
    return [size(n) for n in (stats or {}).get("operation_bytes") or []]
