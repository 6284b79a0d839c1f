"""A table's digest as its row keeps it (`planner_state`), with the time it makes the periodic trigger due
(`tick_due_at`): stored together, by every pass and under the table's planning lock, so the trigger reads
only the tables time made due."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tms.db import TablePolicy, TableRecord, TableRepo
from tms.planning.decisions import PlannerOptions, next_tick_at
from tms.planning.digest import TimelineDigest
from tms.planning.outlook import stored_outlook


def stored_digest(row: TableRecord | Any, options: PlannerOptions) -> TimelineDigest | None:
    """The row's digest (of a table, or of TableRepo.tick_rows), None if it has none the planner can use (see
    TimelineDigest.from_state): one counting for the services the planner schedules on the table under its policy
    (PlannerOptions.services_for)."""
    return TimelineDigest.from_state(row.planner_state, options.services_for(TablePolicy.from_stored(row.policies)),
                                     options.context.local_zone)


def tick_due_at(row: TableRecord | Any, digest: TimelineDigest | None, options: PlannerOptions) -> datetime | None:
    """When the periodic trigger finds work on the table with this digest (next_tick_at, under its policy)."""
    return next_tick_at(digest, TablePolicy.from_stored(row.policies), options,
                        is_mor=row.table_type == "MERGE_ON_READ")


def store_digest(tables: TableRepo, row: TableRecord, digest: TimelineDigest | None, options: PlannerOptions,
                 now: datetime | None = None) -> None:
    """Keep `digest` in the locked table's row (None: forget it, the next reading rebuilds it), its tick time,
    and the planner's outlook on each service (`services`: what the table's page and API show) as of `now`."""
    due_at = tick_due_at(row, digest, options)
    if digest is None:
        tables.store_digest(row.id, {}, due_at)
        return
    services = stored_outlook(digest, row.policy, options, now or datetime.now(UTC), is_mor=row.is_mor)
    tables.store_digest(row.id, {**digest.to_state(), "services": services}, due_at)
