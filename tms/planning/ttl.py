"""Time to live: which records and which partitions of a table have expired under its policy at a moment
(the planner's clock, which tests inject).

Record TTL (`tms.ttl.field`, `tms.ttl.days`): a record whose field holds a time before `now - days` has expired
(tms.record_ttl); a compaction or clustering plan carries that moment, so that every attempt drops the same
records.

Partition TTL (Hudi's KEEP_BY_TIME): a partition expires `days.retain` days after its time, which is the
time its path stands for on a table partitioned by time (the time-based key generator's output date format),
else its last write: the newest of its latest file slices' base instants (Hudi's rule) and of the completed
writes on the active timeline that wrote into it (which a MERGE_ON_READ log append leaves out of the
former)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from tms.hudi.fs_view.partition_paths import partition_time
from tms.hudi.records.schema import META_FIELDS
from tms.hudi.records.schema_evolution import full_arrow_schema, latest_data_schema
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, instant_to_datetime
from tms.hudi.timeline.serde import DELETE_PARTITION, TTL_CUTOFF_KEY, TTL_FIELD_KEY
from tms.record_ttl import ttl_field_refusal

from .policy import TablePolicy


def ttl_policy_refusal(table: HudiTable, policy: TablePolicy) -> tuple[str, str] | None:
    """Why `policy`'s TTL options cannot apply to `table`: (the option, one line), or None if they can (or none
    is set). Checked when a policy is set, so that a TTL that could not run is never accepted."""
    if policy.record_ttl:
        data_schema = latest_data_schema(table)
        if data_schema is None:
            return "tms.ttl.field", f"table {table.name} has no schema yet to find tms.ttl.field in"
        schema = full_arrow_schema(data_schema)
        refusal = ttl_field_refusal(pa.schema([f for f in schema if f.name not in META_FIELDS]), policy.ttl_field)
        if refusal:
            return "tms.ttl.field", refusal
    if policy.partition_ttl and not table.config.partition_fields:
        return ("hoodie.partition.ttl.days.retain",
                f"table {table.name} is not partitioned: partition TTL has no partition to delete")
    return None


def record_ttl_cutoff(policy: TablePolicy, now: datetime) -> datetime:
    """Records older than this have expired."""
    return now.astimezone(UTC) - timedelta(days=policy.ttl_days)


def ttl_plan_metadata(policy: TablePolicy, now: datetime) -> dict[str, str]:
    """What a compaction or clustering plan carries of the record TTL (nothing when none is set)."""
    if not policy.record_ttl:
        return {}
    return {TTL_FIELD_KEY: policy.ttl_field,
            TTL_CUTOFF_KEY: str(int(record_ttl_cutoff(policy, now).timestamp() * 1000))}


@dataclass(frozen=True)
class TtlState:
    """What TTL did and has to do on a table, for its page and `tms tables show`."""

    record_ttl_cutoff: datetime | None    # records before this have expired (None: no record TTL)
    last_record_ttl: str | None           # the last instant that applied the record TTL (compaction, clustering,
                                          # or the TTL task's deletes)
    last_partition_delete: str | None     # the last delete_partition replacecommit
    expired_partitions: list[str]         # expired now and not deleted yet, oldest first (at most SHOWN)
    expired_partitions_total: int


SHOWN = 20


def ttl_state(table: HudiTable, policy: TablePolicy, now: datetime) -> TtlState | None:
    """The table's TTL state at `now`; None when no TTL is set."""
    if not (policy.record_ttl or policy.partition_ttl):
        return None
    tl = table.timeline
    last_record = last_partition = None
    for inst in tl.completed((Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)):
        meta = tl.commit_metadata(inst)
        if TTL_CUTOFF_KEY in (meta.extra_metadata or {}):
            last_record = inst.timestamp
        if (meta.operation_type or "").upper() == DELETE_PARTITION:
            last_partition = inst.timestamp
    expired = expired_partitions(table, policy.merged(
        {"hoodie.partition.ttl.management.max.partitions.to.delete": 10**9}), now)
    return TtlState(record_ttl_cutoff(policy, now) if policy.record_ttl else None, last_record, last_partition,
                    expired[:SHOWN], len(expired))


# --- partition TTL --------------------------------------------------------------------------------------
def partition_times(table: HudiTable) -> dict[str, datetime]:
    """Each live partition's time for KEEP_BY_TIME (see the module docstring); a partition whose every file
    group was replaced (already deleted) is left out."""
    config, zone = table.config, table.config.timeline_zone
    view = table.file_system_view()
    last_base: dict[str, str] = {}
    for s in view.latest_slices():
        last_base[s.partition] = max(last_base.get(s.partition, ""), s.base_instant)
    last_write: dict[str, str] = {}
    tl = table.timeline
    for inst in tl.completed((Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)):
        for partition in tl.commit_metadata(inst).partition_to_write_stats or {}:
            last_write[partition] = max(last_write.get(partition, ""), inst.timestamp)
    out = {}
    for partition, base in last_base.items():
        by_value = partition_time(config, partition)
        out[partition] = by_value if by_value is not None else instant_to_datetime(
            max(base, last_write.get(partition, "")), zone)
    return out


def expired_partitions(table: HudiTable, policy: TablePolicy, now: datetime) -> list[str]:
    """The partitions to delete now: expired under KEEP_BY_TIME, oldest first, at most the policy's bound.
    None for a table without partition fields (as Hudi)."""
    if not policy.partition_ttl or not table.config.partition_fields:
        return []
    cutoff = now.astimezone(UTC) - timedelta(days=policy.partition_ttl_days)
    times = partition_times(table)
    expired = sorted((t, p) for p, t in times.items() if t < cutoff)
    return [p for _, p in expired[:policy.partition_ttl_max_partitions]]
