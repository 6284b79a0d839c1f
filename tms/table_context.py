"""What TMS passes the format library, built from this process's settings: the fsspec options of each storage
root (TMS_STORAGE_ROOT_OPTIONS) and the zone of LOCAL-timeline tables (TMS_TIMELINE_LOCAL_TIMEZONE). Each role
builds it once from its settings and passes it down (`HudiTable.load(..., context=...)`); the library reads no
settings. The environment only hands the settings to the processes TMS starts (`child_env`), whose entry points
load their settings and build their own context."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tms.hudi.context import HudiContext
from tms.storage_roots import ROOT_OPTIONS_ENV, RootStorageOptions, dump_root_options
from tms.timeline_zone import LOCAL_TIMEZONE_ENV, zone_to_pass

if TYPE_CHECKING:
    from tms.config import Settings


def table_context(settings: Settings) -> HudiContext:
    """The context of `settings`: each root's options (none: the store clients' defaults), and the zone of LOCAL
    timelines (the setting, else this process's zone)."""
    options = settings.storage_root_options
    return HudiContext(storage_options=RootStorageOptions(options) if options else None,
                       local_zone=zone_to_pass(settings.timeline_local_timezone))


def child_env(settings: Settings) -> dict[str, str]:
    """The settings the format library needs, as the environment of a process TMS starts carries them (names of
    credential variables and files only, no credential): a job's driver loads them with its settings, a Spark
    executor's copy of TMS (an engine's older code) reads them itself."""
    env = {}
    if settings.storage_root_options:
        env[ROOT_OPTIONS_ENV] = dump_root_options(settings.storage_root_options)
    if settings.timeline_local_timezone:
        env[LOCAL_TIMEZONE_ENV] = settings.timeline_local_timezone
    return env
