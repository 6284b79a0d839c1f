"""When to archive a table's active timeline: Hudi's archiver's own rule (tms.hudi.table.archival), with the
settings the table's policy gives in Hudi's option names, and the earliest commit the cleaner's policy retains.
Archival writes nothing on the timeline: what is planned is the request (a task of its own, tms.db's
ArchiveTaskRepo) and the latest instant it archives through, which the job decides again when it runs."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from tms.hudi.config import write as write_config
from tms.hudi.table.archival import ArchivalSettings, instants_to_archive
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService

from .clean import earliest_instant_to_retain
from .planned import Planned
from .policy import TablePolicy
from .stats import PlanStats

# The policy options Hudi's archiver reads (ArchivalSettings.from_options, for_metadata_table).
ARCHIVAL_OPTIONS = tuple(option.key for option in (
    write_config.KEEP_MIN_COMMITS, write_config.KEEP_MAX_COMMITS, write_config.TIMELINE_COMPACTION_BATCH_SIZE,
    write_config.ARCHIVE_BEYOND_SAVEPOINT, write_config.COMPACTION_TRIGGER_STRATEGY,
    write_config.COMPACTION_MAX_DELTA_COMMITS, write_config.METADATA_KEEP_MIN_COMMITS,
    write_config.METADATA_KEEP_MAX_COMMITS, write_config.METADATA_COMPACT_MAX_DELTA_COMMITS))


def archival_options(policy: TablePolicy) -> dict[str, str]:
    """The `hoodie.*` options of the table's archival, as a Hudi writer would be given them."""
    options = policy.options()
    return {key: str(options[key]).lower() if isinstance(options[key], bool) else str(options[key])
            for key in ARCHIVAL_OPTIONS}


def archival_settings(options: Mapping[str, str]) -> ArchivalSettings:
    return ArchivalSettings.from_options(options)


def cleaner_retains_from(table: HudiTable, policy: TablePolicy, now: datetime) -> str | None:
    """The earliest commit the cleaner's policy retains now (CleanerUtils.getEarliestCommitToRetain), as the
    archiver widens its limits by it."""
    earliest = earliest_instant_to_retain(table, policy, now)
    return earliest.timestamp if earliest is not None else None


def plan_archive(table: HudiTable, policy: TablePolicy, now: datetime) -> Planned | None:
    """The archival Hudi's rule asks for now (None: the active timeline is within its limit, or what is over it
    is held back): its `instant` the latest instant it archives, its operations the instants."""
    chosen = instants_to_archive(table, archival_settings(archival_options(policy)),
                                 cleaner_retains_from=cleaner_retains_from(table, policy, now))
    if not chosen:
        return None
    return Planned(chosen[-1], TableService.ARCHIVE, PlanStats(len(chosen), (), 0, True))
