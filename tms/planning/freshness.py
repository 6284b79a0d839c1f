"""Freshness: when will the oldest delta commit not yet in a compaction plan be compacted, and will that be
within the table's objective (`tms.freshness.max.uncompacted.seconds`)? Pure, from the planner's digest, the
table's policy and its recent compaction durations.

The forecast: the compaction that takes that delta commit is planned when the trigger fires — now if it is due,
at the time bound for a time-based trigger, and for a count-based one after the delta commits still missing
arrive at the table's recent commit rate (the mean interval between the delta commits the digest counts) — and
completes a typical compaction's duration later (the median of the table's recent ones, 0 without history). The
objective is at risk when that completion comes after the oldest delta commit's deadline (its instant time plus
the objective), or, with no compaction in sight, once half the objective has passed; the lead is the time left
until the deadline when the warning is given."""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tms.hudi.timeline.instant import instant_to_datetime
from tms.table_service import TableService

from .digest import ALWAYS, TimelineDigest
from .policy import TablePolicy, TriggerStrategy

_COUNT_STRATEGIES = (TriggerStrategy.NUM_COMMITS, TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST)


@dataclass(frozen=True)
class FreshnessForecast:
    oldest: datetime          # the oldest delta commit not yet in a compaction plan
    deadline: datetime        # oldest + the objective
    planned_at: datetime | None  # when the trigger is expected to fire (None: not foreseeable)
    compacted_at: datetime | None  # planned_at + a typical compaction's duration
    at_risk: bool
    lead_seconds: float       # deadline - now: the time left when at risk (negative: missed already)


def forecast_freshness(digest: TimelineDigest, policy: TablePolicy, now: datetime,
                       compaction_seconds: Sequence[float]) -> FreshnessForecast | None:
    """None when the table has no objective or nothing waits for a compaction."""
    objective = policy.freshness_max_uncompacted_seconds
    deltas = digest.counted.get(TableService.COMPACTION) or []
    if not objective or not deltas:
        return None
    zone = digest.zone
    oldest = instant_to_datetime(deltas[0], zone)
    deadline = oldest + timedelta(seconds=objective)
    planned_at = _trigger_fires_at(digest, policy, now, [instant_to_datetime(d, zone) for d in deltas])
    duration = timedelta(seconds=statistics.median(compaction_seconds)) if compaction_seconds else timedelta(0)
    compacted_at = planned_at + duration if planned_at is not None else None
    # No compaction in sight (a count trigger's writer fell silent, too few commits to tell a rate): at risk once
    # half the objective is gone.
    at_risk = compacted_at > deadline if compacted_at is not None else now >= oldest + (deadline - oldest) / 2
    return FreshnessForecast(oldest, deadline, planned_at, compacted_at, at_risk, (deadline - now).total_seconds())


def _trigger_fires_at(digest: TimelineDigest, policy: TablePolicy, now: datetime,
                      deltas: list[datetime]) -> datetime | None:
    if digest.compaction_may_be_due(policy, now):
        return now
    by_time = digest.compaction_due_at(policy)
    by_time = None if by_time is None or by_time == ALWAYS else max(by_time, now)
    by_count = _count_reached_at(policy, now, deltas)
    strategy = policy.trigger_strategy
    if strategy in _COUNT_STRATEGIES:
        return by_count
    if strategy == TriggerStrategy.TIME_ELAPSED:
        return by_time
    if strategy == TriggerStrategy.NUM_OR_TIME:
        return min((t for t in (by_count, by_time) if t is not None), default=None)
    return max(by_count, by_time) if by_count and by_time else None  # NUM_AND_TIME


def _count_reached_at(policy: TablePolicy, now: datetime, deltas: list[datetime]) -> datetime | None:
    """When the count trigger's delta commits will have arrived, at the rate the counted ones came (None: too
    few to tell a rate)."""
    missing = policy.max_delta_commits - len(deltas)
    if missing <= 0:
        return now
    if len(deltas) < 2:
        return None
    interval = (deltas[-1] - deltas[0]) / (len(deltas) - 1)
    return max(now, deltas[-1] + interval * missing)
