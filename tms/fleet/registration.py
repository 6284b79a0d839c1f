"""What registering a table stores of it and whether TMS takes it: one decision for the API's registration
and for discovery."""
from __future__ import annotations

from typing import Any

from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.capabilities import Capability, capabilities
from tms.table_service import TableService


def registration_facts(table: HudiTable) -> dict[str, Any]:
    """The columns a registration stores, from `hoodie.properties`."""
    config = table.config
    try:
        merge_mode = config.merge_mode.value
    except HudiError:  # an unknown merge mode: recorded as unknown, refused later by the jobs
        merge_mode = None
    return {
        "name": config.name, "database": config.database, "table_type": config.table_type.value,
        "table_version": config.version, "record_key_fields": config.record_key_fields,
        "partition_fields": config.partition_fields, "ordering_fields": config.ordering_fields,
        "merge_mode": merge_mode, "properties": dict(config.props),
    }


def registration_refusal(report: dict[str, Capability]) -> str | None:
    """Why a table TMS can do nothing for (neither read it nor run a table service on it) is refused at
    registration, in one line; None when it can do something. Archiving its timeline alone (which every table
    allows: no data file is read or written) does not make a table worth taking."""
    report = {service: c for service, c in report.items() if service != TableService.ARCHIVE}
    if any(c.can_run for c in report.values()):
        return None
    reasons = dict.fromkeys(reason for c in report.values() for reason in c.reason.split("; "))
    return "TMS can neither read this table nor run any table service on it: " + "; ".join(reasons)


def assess(table: HudiTable) -> tuple[dict[str, Capability], str | None]:
    """The table's capabilities and the refusal of its registration (None: TMS takes it)."""
    report = capabilities(table)
    return report, registration_refusal(report)
