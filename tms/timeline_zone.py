"""The zone of LOCAL-timeline tables, as TMS passes it to the format library: the setting
TMS_TIMELINE_LOCAL_TIMEZONE, read from this process's environment (so the planner, the service, the worker and the
jobs it starts all see it), else this process's local zone, as a JVM on this host would take it (`TZ`, else
/etc/localtime). Passed in when `tms` is imported, before any table is read."""
from __future__ import annotations

import functools
import os
from datetime import tzinfo

from tms.hudi.errors import HudiError
from tms.hudi.timeline.zone import system_zone, use_local_zone, zone_named, zone_of_tz

LOCAL_TIMEZONE_ENV = "TMS_TIMELINE_LOCAL_TIMEZONE"


@functools.lru_cache(maxsize=8)
def _local_zone(setting: str | None, tz: str | None) -> tzinfo:
    if setting:
        try:
            return zone_named(setting)
        except HudiError as e:
            raise HudiError(f"{LOCAL_TIMEZONE_ENV}: {e}") from None
    if tz:
        try:
            return zone_of_tz(tz)
        except (HudiError, OSError, ValueError):
            raise HudiError(f"TZ={tz} names no time zone file: set {LOCAL_TIMEZONE_ENV} to the zone the writers "
                            "of LOCAL-timeline tables run in") from None
    return system_zone()


def local_zone(setting: str | None = None) -> tzinfo:
    """The zone of LOCAL timelines: `setting` (default: TMS_TIMELINE_LOCAL_TIMEZONE from the environment), else
    this process's local zone. HudiError if it names no zone."""
    setting = setting or os.environ.get(LOCAL_TIMEZONE_ENV) or None
    return _local_zone(setting, os.environ.get("TZ") or None)


use_local_zone(local_zone)
