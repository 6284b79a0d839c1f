"""The zone a table's instant times are wall-clock times in. Hudi writes `yyyyMMddHHmmssSSS` in
`hoodie.table.timeline.timezone`: UTC, or LOCAL (the default when the property is absent), the writing JVM's
default zone, which the table does not record. The zone of LOCAL tables is passed in by the library's caller
(`use_local_zone`: TMS passes its setting, see `tms.timeline_zone`); the library reads no environment. Until one
is passed in it is this host's zone (/etc/localtime, else UTC, as a JVM without TZ takes it)."""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..config import table as table_config
from ..errors import HudiError

TIMELINE_TIMEZONE = table_config.TIMELINE_TIMEZONE.key
_SYSTEM_ZONE_FILE = "/etc/localtime"


def zone_named(name: str) -> ZoneInfo:
    """The IANA zone `name` (`Asia/Shanghai`); HudiError for a name that is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise HudiError(f"{name!r} is not an IANA time zone name (such as Asia/Shanghai or UTC)") from None


def zone_of_tz(tz: str) -> tzinfo:
    """The zone a `TZ` value names as a JVM reads it (`:` prefix dropped; an absolute path is a zone file);
    HudiError (or OSError, ValueError for an unreadable zone file) if it names none."""
    name = tz.removeprefix(":")
    if name.startswith("/"):
        with open(name, "rb") as f:
            return ZoneInfo.from_file(f, key=name)
    return zone_named(name)


@functools.lru_cache(maxsize=1)
def system_zone() -> tzinfo:
    """This host's zone from /etc/localtime; UTC when none is configured (the JVM's default is GMT too)."""
    try:
        with open(_SYSTEM_ZONE_FILE, "rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except FileNotFoundError:
        return UTC


_local_zone_source: Callable[[], tzinfo] = system_zone


def use_local_zone(source: Callable[[], tzinfo]) -> None:
    """Take the zone of LOCAL timelines from `source`, called each time a table's zone is needed (it may raise
    HudiError for a setting that names no zone)."""
    global _local_zone_source
    _local_zone_source = source


def local_zone() -> tzinfo:
    """The zone of LOCAL timelines, as passed in (`use_local_zone`)."""
    return _local_zone_source()


def is_utc_timeline(props: Mapping[str, str]) -> bool:
    """Whether the table's instant times are UTC (else LOCAL); HudiError for a value Hudi does not accept."""
    value = table_config.TIMELINE_TIMEZONE.value(props).upper()
    if value not in ("UTC", "LOCAL"):
        raise HudiError(f"{TIMELINE_TIMEZONE}={table_config.TIMELINE_TIMEZONE.raw(props)}: expected LOCAL or UTC")
    return value == "UTC"


def zone_of(utc: bool) -> tzinfo:
    return UTC if utc else local_zone()


def timeline_zone(props: Mapping[str, str]) -> tzinfo:
    """The zone of the table's instant times, from its hoodie.properties."""
    return zone_of(is_utc_timeline(props))
