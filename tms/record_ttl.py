"""Record TTL: which records have expired, by one field of theirs and a cutoff moment; shared by the planner
(which puts the cutoff into the plans it writes) and the executors (which drop expired records from the file
groups they rewrite). A record whose field holds a time before the cutoff has expired; a null never does. The
field may be a timestamp, a date, a long of epoch milliseconds or a string holding an ISO date or timestamp
(UTC)."""
from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from tms.hudi.errors import HudiError
from tms.hudi.timeline.serde import TTL_CUTOFF_KEY, TTL_FIELD_KEY


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


def ttl_commit_metadata(plan_metadata: dict[str, str] | None) -> dict[str, str]:
    """The record TTL keys of a plan's extra metadata, which its commit carries too."""
    return {k: v for k, v in (plan_metadata or {}).items() if k in (TTL_FIELD_KEY, TTL_CUTOFF_KEY)}


def ttl_of_plan(extra_metadata: dict[str, str] | None) -> tuple[str, int] | None:
    """The (field, cutoff millis) a plan's extra metadata carries, or None."""
    meta = extra_metadata or {}
    if TTL_FIELD_KEY not in meta or TTL_CUTOFF_KEY not in meta:
        return None
    return meta[TTL_FIELD_KEY], int(meta[TTL_CUTOFF_KEY])
