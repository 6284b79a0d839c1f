"""The zone a table's instant times are wall-clock times in. Hudi writes `yyyyMMddHHmmssSSS` in
`hoodie.table.timeline.timezone`: UTC, or LOCAL (the default when the property is absent), the writing JVM's
default zone, which the table does not record. The zone of LOCAL tables is passed in by the library's caller
(`HudiContext.local_zone`: TMS passes its setting, see `tms.table_context`); the library reads no environment.
When none is passed in it is this host's zone (/etc/localtime, else UTC, as a JVM without TZ takes it)."""
from __future__ import annotations

import functools
from collections.abc import Mapping
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


def is_utc_timeline(props: Mapping[str, str]) -> bool:
    """Whether the table's instant times are UTC (else LOCAL); HudiError for a value Hudi does not accept."""
    value = table_config.TIMELINE_TIMEZONE.value(props).upper()
    if value not in ("UTC", "LOCAL"):
        raise HudiError(f"{TIMELINE_TIMEZONE}={table_config.TIMELINE_TIMEZONE.raw(props)}: expected LOCAL or UTC")
    return value == "UTC"


def zone_of(utc: bool, local_zone: tzinfo | None) -> tzinfo:
    """UTC, or the zone of LOCAL timelines as passed in (None: this host's, `system_zone`)."""
    if utc:
        return UTC
    return local_zone if local_zone is not None else system_zone()


def timeline_zone(props: Mapping[str, str], local_zone: tzinfo | None) -> tzinfo:
    """The zone of the table's instant times, from its hoodie.properties and the zone of LOCAL timelines."""
    return zone_of(is_utc_timeline(props), local_zone)
