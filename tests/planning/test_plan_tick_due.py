"""The time a table's digest makes the periodic trigger due (`next_tick_at`, stored as the table's
`tick_due_at`, the only tables the trigger looks at) agrees with the trigger itself: at any time, `on_tick`
finds work exactly when that time has come, and never when it is None."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from tms.planning.decisions import PlannerOptions, next_tick_at, on_tick
from tms.planning.digest import ALWAYS, COUNTED, TimelineDigest
from tms.planning.policy import TablePolicy, TriggerStrategy

_TIMES = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC))
_INSTANTS = _TIMES.map(lambda t: t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}")
_SECONDS = st.one_of(st.integers(1, 10 ** 7), st.integers(10 ** 7, 10 ** 16))  # past the calendar's end too


@st.composite
def _options(draw) -> PlannerOptions:
    services = draw(st.sets(st.sampled_from(["compaction", "clustering", "clean", "rollback"])))
    return PlannerOptions(services=frozenset(services), clean_commits=draw(st.integers(1, 5)))


@st.composite
def _policies(draw) -> TablePolicy:
    return TablePolicy.model_validate({
        "hoodie.compact.inline.trigger.strategy": draw(st.sampled_from(list(TriggerStrategy))),
        "hoodie.compact.inline.max.delta.commits": draw(st.integers(1, 6)),
        "hoodie.compact.inline.max.delta.seconds": draw(_SECONDS),
        "hoodie.clustering.async.max.commits": draw(st.integers(1, 5)),
        "hoodie.client.heartbeat.interval_in_ms": draw(st.one_of(st.integers(1, 10 ** 8),
                                                                 st.integers(10 ** 8, 10 ** 19))),
        "hoodie.client.heartbeat.tolerable.misses": draw(st.integers(0, 4)),
    })


@st.composite
def _digests(draw, options: PlannerOptions) -> TimelineDigest:
    optional = st.one_of(st.none(), _INSTANTS)
    counted = {service: sorted(draw(st.lists(_INSTANTS, max_size=8, unique=True)))
               for service in sorted(set(options.services) & set(COUNTED))}
    return TimelineDigest(
        compacted=draw(optional), clustered=draw(optional), cleaned=draw(optional), counted=counted,
        pending_writes=draw(st.dictionaries(_INSTANTS, _TIMES.map(datetime.timestamp), max_size=3)),
        held=draw(st.one_of(st.just({}), st.dictionaries(_INSTANTS, st.lists(_INSTANTS, max_size=2),
                                                         min_size=1, max_size=2))),
        attempts=draw(st.dictionaries(st.sampled_from(COUNTED), _INSTANTS, max_size=2)))


@settings(max_examples=1500, deadline=None)
@given(data=st.data(), options=_options(), policy=_policies(), is_mor=st.booleans(), now=_TIMES)
def test_the_trigger_finds_work_exactly_from_the_digest_s_tick_time(data, options, policy, is_mor, now):
    digest = data.draw(_digests(options))
    due = next_tick_at(digest, policy, options, is_mor=is_mor)
    moments = [now, datetime(2100, 1, 1, tzinfo=UTC)]
    if due is not None and due > ALWAYS:  # at the boundary, to the microsecond
        moments += [due, due - timedelta(microseconds=1), due + timedelta(microseconds=1)]
    for at in moments:
        work = on_tick(digest, policy, at, options, is_mor=is_mor)
        assert bool(work) == (due is not None and at >= due), (at, due, work)


def test_each_way_to_be_due_by_time_has_its_moment():
    options = PlannerOptions(services=frozenset({"compaction", "rollback"}), clean_commits=5)
    hourly = TablePolicy.model_validate({"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
                                         "hoodie.compact.inline.max.delta.seconds": 3600})
    by_count = TablePolicy.model_validate({"hoodie.compact.inline.max.delta.commits": 2})
    one_delta = TimelineDigest(counted={"compaction": ["20260101000000000"]})
    # time-based compaction: an hour after the first delta commit; count-based: only a new commit can
    assert next_tick_at(one_delta, hourly, options, is_mor=True) == datetime(2026, 1, 1, 1, tzinfo=UTC)
    assert next_tick_at(one_delta, by_count, options, is_mor=True) is None
    assert next_tick_at(one_delta, hourly, options, is_mor=False) is None, "no compaction on COPY_ON_WRITE"
    two_deltas = TimelineDigest(counted={"compaction": ["20260101000000000", "20260101000100000"]})
    assert next_tick_at(two_deltas, by_count, options, is_mor=True) == ALWAYS, "already due"
    # a pending write: its first sighting plus the heartbeat's tolerance (2 x 60 s by default)
    seen = datetime(2026, 1, 1, 3, tzinfo=UTC)
    pending = TimelineDigest(counted={"compaction": []}, pending_writes={"20260101030000000": seen.timestamp()})
    assert next_tick_at(pending, by_count, options, is_mor=True) == seen + timedelta(seconds=120)
    assert next_tick_at(pending, by_count, PlannerOptions(frozenset({"compaction"}), 5), is_mor=True) is None
    # a held plan: every tick looks at it
    assert next_tick_at(TimelineDigest(held={"20260101000000000": ["20251231000000000"]}), by_count, options,
                        is_mor=True) == ALWAYS
    assert next_tick_at(None, hourly, options, is_mor=True) is None, "never read: the scan's business"
