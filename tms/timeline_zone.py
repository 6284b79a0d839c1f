"""The zone of LOCAL-timeline tables, as TMS passes it to the format library (`tms.table_context`): the setting
TMS_TIMELINE_LOCAL_TIMEZONE, else this process's local zone, as a JVM on this host would take it (`TZ`, else
/etc/localtime)."""
from __future__ import annotations

import functools
import os
from datetime import tzinfo

from tms.hudi.errors import HudiError
from tms.hudi.timeline.zone import system_zone, zone_named, zone_of_tz

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
    """The zone of LOCAL timelines: `setting` (TMS_TIMELINE_LOCAL_TIMEZONE), else this process's local zone.
    HudiError if it names no zone."""
    return _local_zone(setting or None, os.environ.get("TZ") or None)


def zone_to_pass(setting: str | None) -> tzinfo | None:
    """`local_zone(setting)` as TMS passes it to the format library (`HudiContext.local_zone`): None where it is
    this host's /etc/localtime zone, the library's own default (and a zone read from a file does not pickle to
    the Spark tasks that carry the context)."""
    return local_zone(setting) if setting or os.environ.get("TZ") else None
