"""What TMS can do for a table, decided from its `hoodie.properties` alone (no listing): read it exactly,
and run each table service on it, or why not, in one line a user can act on.

One decision serves every caller: `tms schedule` and the planner before they write a plan, the executors before
they start, registration and the table's health report it. Nothing is planned that cannot run. Reading is the
format library's own decision (`tms.hudi.records.readability`, the one its reader takes before it reads a row), reported
here beside the services."""
from __future__ import annotations

from typing import NamedTuple

from tms.hudi.errors import HudiError, UnsupportedTableError
from tms.hudi.metadata.writer import unmaintainable_partitions
from tms.hudi.records.base_format import LANCE, PARQUET, table_base_format, unreadable_format_reason
from tms.hudi.records.readability import (
    bootstrap_reason,
    dropped_partition_columns_reason,
    merge_reason,
    require_readable,
    virtual_keys_reason,
)
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State
from tms.hudi.timeline.serde import parse_requested_replace_metadata
from tms.table_service import SERVICES as TABLE_SERVICES
from tms.table_service import TableService

READING = "reading"
COMPACTION, CLUSTERING, CLEAN, ROLLBACK = (TableService.COMPACTION, TableService.CLUSTERING, TableService.CLEAN,
                                           TableService.ROLLBACK)
ARCHIVE = TableService.ARCHIVE
SERVICES = (READING, *TABLE_SERVICES)
# Services that merge records (they read base and log files and write new base files).
_MERGING = (READING, COMPACTION, CLUSTERING)
# Services that write files TMS produces in the table's base file format.
_WRITING_BASE_FILES = (COMPACTION, CLUSTERING)
WRITABLE_FORMATS = (PARQUET, LANCE)


# What a Hudi engine's job runs: TMS's compaction and clustering plans, with Hudi's own procedures
# (jobs/hudi_procedures.py). Where one runs a table's tasks, what TMS's own engine cannot merge or write is
# Hudi's to do; planning stays TMS's (it lists file slices and never merges records).
HUDI_ENGINE_SERVICES = (COMPACTION, CLUSTERING)


class Capability(NamedTuple):
    can_run: bool
    reason: str = ""  # why not; with `engine`, why TMS's own engine cannot (empty when it can run itself)
    engine: str = ""  # the Hudi engine that runs the service where TMS's own engine cannot


def _capability(table: HudiTable, service: str, hudi_engine: str | None) -> Capability:
    """Whether `service` runs on the table: on TMS's own engine, else on the Hudi engine running the table's
    tasks (any refusal but compaction of a COPY_ON_WRITE table is TMS's own engine's)."""
    reasons = "; ".join(_refusals(table, service))
    if (reasons and hudi_engine and service in HUDI_ENGINE_SERVICES
            and (service != COMPACTION or table.config.is_mor)):
        return Capability(True, reasons, hudi_engine)
    return Capability(not reasons, reasons)


def _refusals(table: HudiTable, service: str) -> list[str]:
    """Every reason TMS cannot run `service` (reading included) on the table; empty when it can."""
    config = table.config
    reasons = []
    if service == COMPACTION and not config.is_mor:
        reasons.append(f"compaction applies to MERGE_ON_READ tables; {config.name} is {config.table_type.value}")
    if service in _MERGING:
        reasons.append(merge_reason(config))
    if service not in (ROLLBACK, ARCHIVE):  # archival moves instant files only: no data file is read or written
        reasons.append(bootstrap_reason(config))
    fmt = table_base_format(config)
    if service in _MERGING:
        reasons.append(unreadable_format_reason(fmt) or "")
    if service in _WRITING_BASE_FILES and fmt not in WRITABLE_FORMATS and not unreadable_format_reason(fmt):
        reasons.append(f"TMS cannot write {fmt} base files")
    if service in _MERGING:
        reasons.append(virtual_keys_reason(config))
    if service == READING:
        reasons.append(dropped_partition_columns_reason(config))
    if service not in (READING, ARCHIVE):
        partitions = unmaintainable_partitions(table, service)
        if partitions:
            reasons.append(f"its metadata table has partitions TMS cannot keep in sync for {service} "
                           f"({', '.join(partitions)}): readers would miss the files TMS writes and list the "
                           "files it deletes (disable the metadata table on the writers, hoodie.metadata.enable=false)")
    return [r for r in reasons if r]


def capabilities(table: HudiTable, hudi_engine: str | None = None) -> dict[str, Capability]:
    """For reading and each table service: whether TMS can run it on `table`, and why not. `hudi_engine`: the
    Hudi engine that runs the table's tasks (RolloutRepo.hudi_engine_for), if one does."""
    return {service: _capability(table, service, hudi_engine) for service in SERVICES}


def require_capability(table: HudiTable, service: str, hudi_engine: str | None = None) -> None:
    """Raise UnsupportedTableError (one line) unless TMS (or the Hudi engine running the table's tasks) can run
    `service` on `table`."""
    if service == READING:  # the library's own decision, the one its reader takes
        require_readable(table)
        return
    capability = _capability(table, service, hudi_engine)
    if not capability.can_run:
        raise UnsupportedTableError(f"TMS cannot run {service} on table {table.config.name}: {capability.reason}")


def _service_of_plan(table: HudiTable, instant: Instant) -> str | None:
    """The table service a pending instant plans (None: a writer's instant)."""
    action = instant.action
    if action in (COMPACTION, CLUSTERING, CLEAN, ROLLBACK):  # the services are named as their actions
        return action
    if action == Action.REPLACE_COMMIT:  # v6: clustering only if its requested file holds a clustering plan
        try:
            data = table.timeline.read_plan(instant.timestamp)
        except (OSError, HudiError):
            return None
        if data and parse_requested_replace_metadata(data).clustering_plan is not None:
            return CLUSTERING
    return None


def unrunnable_plans(table: HudiTable, hudi_engine: str | None = None) -> list[tuple[Instant, str]]:
    """The requested table-service plans on the timeline that TMS (or the Hudi engine running the table's tasks)
    cannot run now, with why: the planner rolls back those it wrote (with an alert saying why) instead of
    leaving them requested for ever."""
    out = []
    for inst in table.timeline.pending():
        if inst.state is not State.REQUESTED:
            continue
        service = _service_of_plan(table, inst)
        if service is None:
            continue
        capability = _capability(table, service, hudi_engine)
        if not capability.can_run:
            out.append((inst, capability.reason))
    return out
