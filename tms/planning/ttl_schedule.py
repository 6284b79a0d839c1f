"""When a table's TTL tasks are due: pure functions of its policy, its last TTL requests and the time. Each TTL
the policy sets (partition TTL, record TTL) is requested once per `tms.ttl.interval.hours`, the partitions first
(a record TTL run then reads fewer file groups); never two TTL tasks of a table at once. A task's plan carries
the TTL options and the moment of the request, so that every attempt deletes by the same clock."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from tms.table_service import TableService
from tms.task_payload import TtlRequest

from .policy import TablePolicy

# The policy options a TTL task's job reads (from its plan: what the policy said when it was requested).
TTL_OPTIONS = ("tms.ttl.field", "tms.ttl.days", "hoodie.partition.ttl.strategy.type",
               "hoodie.partition.ttl.days.retain", "hoodie.partition.ttl.management.max.partitions.to.delete")


def ttl_services(policy: TablePolicy) -> list[TableService]:
    """The TTL services `policy` sets, in the order they run."""
    return ([TableService.PARTITION_TTL] if policy.partition_ttl else []) + \
        ([TableService.TTL] if policy.record_ttl else [])


def next_ttl_due(policy: TablePolicy, last_requested: Mapping[str, datetime]) -> dict[TableService, datetime | None]:
    """When each TTL service of the policy is next due (None: now, never requested yet)."""
    interval = timedelta(hours=policy.ttl_interval_hours)
    return {s: (last_requested[s.value] + interval if s.value in last_requested else None)
            for s in ttl_services(policy)}


def due_ttl_service(policy: TablePolicy, last_requested: Mapping[str, datetime], now: datetime, *,
                    busy: bool) -> TableService | None:
    """The TTL service to request now, if any (`busy`: a TTL task of the table is running or waiting)."""
    if busy:
        return None
    return next((s for s, due in next_ttl_due(policy, last_requested).items() if due is None or due <= now), None)


def ttl_task_plan(policy: TablePolicy, now: datetime) -> TtlRequest:
    """A TTL task's plan: the policy's TTL options and the moment the TTL counts from."""
    stored = policy.explicit()
    return TtlRequest(policy={k: stored[k] for k in TTL_OPTIONS if k in stored}, now=now.isoformat())
