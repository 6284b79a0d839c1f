"""The zone a table's instant times are wall-clock times in. Hudi writes `yyyyMMddHHmmssSSS` in
`hoodie.table.timeline.timezone`: UTC, or LOCAL (the default when the property is absent), the writing JVM's
default zone, which the table does not record. For LOCAL tables TMS takes the zone from the setting
TMS_TIMELINE_LOCAL_TIMEZONE, read from this process's environment (so the planner, the service, the worker
and the jobs it starts all see it), else this process's local zone, as a JVM on this host would take it
(`TZ`, else /etc/localtime)."""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import HudiError

TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"
LOCAL_TIMEZONE_ENV = "TMS_TIMELINE_LOCAL_TIMEZONE"
_SYSTEM_ZONE_FILE = "/etc/localtime"


def zone_named(name: str) -> ZoneInfo:
    """The IANA zone `name` (`Asia/Shanghai`); HudiError for a name that is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise HudiError(f"{name!r} is not an IANA time zone name (such as Asia/Shanghai or UTC)") from None


@functools.lru_cache(maxsize=8)
def _local_zone(setting: str | None, tz: str | None) -> tzinfo:
    if setting:
        try:
            return zone_named(setting)
        except HudiError as e:
            raise HudiError(f"{LOCAL_TIMEZONE_ENV}: {e}") from None
    if tz:
        name = tz.removeprefix(":")
        try:
            if name.startswith("/"):
                with open(name, "rb") as f:
                    return ZoneInfo.from_file(f, key=name)
            return zone_named(name)
        except (HudiError, OSError, ValueError):
            raise HudiError(f"TZ={tz} names no time zone file: set {LOCAL_TIMEZONE_ENV} to the zone the writers "
                            "of LOCAL-timeline tables run in") from None
    try:
        with open(_SYSTEM_ZONE_FILE, "rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except FileNotFoundError:
        return UTC  # no zone configured at all: the JVM's default is GMT too


def local_zone(setting: str | None = None) -> tzinfo:
    """The zone of LOCAL timelines: `setting` (default: TMS_TIMELINE_LOCAL_TIMEZONE from the environment), else
    this process's local zone. HudiError if it names no zone."""
    setting = setting or os.environ.get(LOCAL_TIMEZONE_ENV) or None
    return _local_zone(setting, os.environ.get("TZ") or None)


def is_utc_timeline(props: Mapping[str, str]) -> bool:
    """Whether the table's instant times are UTC (else LOCAL); HudiError for a value Hudi does not accept."""
    value = (props.get(TIMELINE_TIMEZONE) or "LOCAL").upper()
    if value not in ("UTC", "LOCAL"):
        raise HudiError(f"{TIMELINE_TIMEZONE}={props.get(TIMELINE_TIMEZONE)}: expected LOCAL or UTC")
    return value == "UTC"


def zone_of(utc: bool) -> tzinfo:
    return UTC if utc else local_zone()


def timeline_zone(props: Mapping[str, str]) -> tzinfo:
    """The zone of the table's instant times, from its hoodie.properties."""
    return zone_of(is_utc_timeline(props))
