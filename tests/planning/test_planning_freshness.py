"""The freshness forecast in simulated time: a writer commits a delta commit every minute; the objective is 30
minutes without compaction. A table whose compactions come too late is warned of before its objective is
missed (the lead is reported), one whose compactions keep up is not, and a writer that falls silent under a
count trigger is warned of once half the objective has passed."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tms.planning.digest import TimelineDigest
from tms.planning.freshness import forecast_freshness
from tms.planning.policy import TablePolicy
from tms.table_service import TableService

START = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
OBJECTIVE = 30 * 60


def _instant(at: datetime) -> str:
    return at.strftime("%Y%m%d%H%M%S") + f"{at.microsecond // 1000:03d}"


def _digest(commits: list[datetime]) -> TimelineDigest:
    return TimelineDigest(counted={TableService.COMPACTION: [_instant(c) for c in commits]}, timeline_utc=True)


def _policy(**options) -> TablePolicy:
    return TablePolicy.from_stored({"tms.freshness.max.uncompacted.seconds": OBJECTIVE, **options})


def _first_warning(policy: TablePolicy, compaction_minutes: list[float], minutes: int = 40):
    """Minute by minute (a delta commit each): the first forecast at risk, or None."""
    commits = []
    for minute in range(minutes):
        now = START + timedelta(minutes=minute)
        commits.append(now)
        forecast = forecast_freshness(_digest(commits), policy, now, [m * 60 for m in compaction_minutes])
        if forecast is not None and forecast.at_risk:
            return now, forecast
    return None


def test_compactions_that_come_too_late_are_warned_of_before_the_objective_is_missed():
    # The trigger waits for 15 delta commits (planned at minute 14) and compactions take 20 minutes: done at 34.
    policy = _policy(**{"hoodie.compact.inline.max.delta.commits": 15})
    warned = _first_warning(policy, compaction_minutes=[18, 20, 25])
    assert warned is not None
    at, forecast = warned
    assert forecast.deadline == START + timedelta(seconds=OBJECTIVE)
    assert forecast.compacted_at == START + timedelta(minutes=14 + 20)
    assert at < forecast.deadline and forecast.lead_seconds >= 25 * 60, (at, forecast.lead_seconds)


def test_compactions_that_keep_up_are_not_warned_of():
    policy = _policy(**{"hoodie.compact.inline.max.delta.commits": 5})
    assert _first_warning(policy, compaction_minutes=[3, 4, 5], minutes=5) is None


def test_a_time_trigger_past_the_objective_is_at_risk_at_once():
    policy = _policy(**{"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
                        "hoodie.compact.inline.max.delta.seconds": 3600})
    at, forecast = _first_warning(policy, compaction_minutes=[])
    assert at == START and forecast.planned_at == START + timedelta(hours=1)


def test_a_silent_writer_under_a_count_trigger_is_warned_of_at_half_the_objective():
    policy = _policy(**{"hoodie.compact.inline.max.delta.commits": 5})
    digest = _digest([START])  # one delta commit, then nothing: no rate, no compaction in sight
    quiet = forecast_freshness(digest, policy, START + timedelta(minutes=14), [60])
    assert quiet is not None and not quiet.at_risk and quiet.compacted_at is None
    late = forecast_freshness(digest, policy, START + timedelta(minutes=15), [60])
    assert late is not None and late.at_risk and late.lead_seconds == 15 * 60


def test_no_objective_no_forecast():
    assert forecast_freshness(_digest([START]), TablePolicy(), START, []) is None
