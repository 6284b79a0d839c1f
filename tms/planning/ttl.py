"""Time to live: which records and which partitions of a table have expired under its policy at a moment
(the planner's clock, which tests inject).

Record TTL (`tms.ttl.field`, `tms.ttl.days`): a record whose field holds a time before `now - days` has expired;
a null never expires. The field may be a timestamp, a date, a long of epoch milliseconds or a string holding
an ISO date or timestamp (UTC).

Partition TTL (Hudi's KEEP_BY_TIME): a partition expires `days.retain` days after its time, which is the
time its path stands for on a table partitioned by time (the time-based key generator's output date format),
else its last write: the newest of its latest file slices' base instants (Hudi's rule) and of the completed
writes on the active timeline that wrote into it (which a MERGE_ON_READ log append leaves out of the
former)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from tms.hudi.errors import HudiError
from tms.hudi.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, instant_to_datetime
from tms.hudi.partition_paths import partition_time
from tms.hudi.table import HudiTable

from .policy import TablePolicy

# Hudi options a Hudi plan's extra metadata carries the record TTL in, so every attempt of the plan drops the
# same records whatever the clock says when it runs.
TTL_FIELD_KEY = "tms.ttl.field"
TTL_CUTOFF_KEY = "tms.ttl.cutoff.millis"


def ttl_field_refusal(schema: pa.Schema, field: str) -> str | None:
    """Why `field` of the data schema `schema` cannot carry a record TTL (one line), or None if it can."""
    if field not in schema.names:
        return f"tms.ttl.field {field!r} is not a field of the table's schema ({', '.join(schema.names)})"
    t = schema.field(field).type
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_int64(t) or pa.types.is_string(t) \
            or pa.types.is_large_string(t):
        return None
    return (f"tms.ttl.field {field!r} is a {t}, which holds no time (a timestamp, a date, a long of epoch "
            f"milliseconds or a string date)")


def record_ttl_cutoff(policy: TablePolicy, now: datetime) -> datetime:
    """Records older than this have expired."""
    return now.astimezone(UTC) - timedelta(days=policy.ttl_days)


def expired_mask(rows: pa.Table, field: str, cutoff: datetime) -> pa.ChunkedArray:
    """True for each row of `rows` whose `field` holds a time before `cutoff` (False for a null)."""
    column = rows.column(field)
    t = column.type
    if pa.types.is_timestamp(t):
        bound = pa.scalar(cutoff if t.tz else cutoff.replace(tzinfo=None), pa.timestamp("us", t.tz))
        mask = pc.less(column.cast(pa.timestamp("us", t.tz)), bound)
    elif pa.types.is_date(t):
        mask = pc.less(column.cast(pa.timestamp("us")), pa.scalar(cutoff.replace(tzinfo=None), pa.timestamp("us")))
    elif pa.types.is_int64(t):
        mask = pc.less(column, pa.scalar(int(cutoff.timestamp() * 1000), pa.int64()))
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            times = column.cast(pa.timestamp("us"))
        except pa.ArrowInvalid as e:
            raise HudiError(f"tms.ttl.field {field!r} holds a string that is not an ISO date or timestamp: {e}"
                            ) from None
        mask = pc.less(times, pa.scalar(cutoff.replace(tzinfo=None), pa.timestamp("us")))
    else:
        raise HudiError(f"tms.ttl.field {field!r} is a {t}, which holds no time")
    return pc.fill_null(mask, False)


def drop_expired(rows: pa.Table, field: str, cutoff_millis: int) -> pa.Table:
    """`rows` without the expired ones (the cutoff as a plan carries it)."""
    cutoff = datetime.fromtimestamp(cutoff_millis / 1000, UTC)
    return rows.filter(pc.invert(expired_mask(rows, field, cutoff)))


def ttl_plan_metadata(policy: TablePolicy, now: datetime) -> dict[str, str]:
    """What a compaction or clustering plan carries of the record TTL (nothing when none is set)."""
    if not policy.record_ttl:
        return {}
    return {TTL_FIELD_KEY: policy.ttl_field,
            TTL_CUTOFF_KEY: str(int(record_ttl_cutoff(policy, now).timestamp() * 1000))}


def ttl_of_plan(extra_metadata: dict[str, str] | None) -> tuple[str, int] | None:
    """The (field, cutoff millis) a plan's extra metadata carries, or None."""
    meta = extra_metadata or {}
    if TTL_FIELD_KEY not in meta or TTL_CUTOFF_KEY not in meta:
        return None
    return meta[TTL_FIELD_KEY], int(meta[TTL_CUTOFF_KEY])


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
    for inst in tl.completed((COMMIT, DELTA_COMMIT, REPLACE_COMMIT)):
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
