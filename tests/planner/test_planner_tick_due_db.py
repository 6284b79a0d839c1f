"""The periodic trigger looks only at the tables time made due: every pass stores the table's `tick_due_at`
with its digest (the digest's next_tick_at), the trigger reads the tables whose time passed, plans a
time-based compaction at its time and not a microsecond before, and rewrites the time of a table it finds
not due, unless a pass holds the table."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from planner_db_support import ALL_SERVICES, TrackedTable
from planning_support import rec
from sqlalchemy import text

from planner.runner import Planner
from tms.db import TablePolicy, TableRepo
from tms.hudi.timeline.instant import instant_to_datetime
from tms.plan_pass.on_request import locked_for_planning
from tms.planning.decisions import next_tick_at
from tms.planning.digest import TimelineDigest

HOURLY = {"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED", "hoodie.compact.inline.max.delta.seconds": 3600}
BY_COUNT = {"hoodie.compact.inline.max.delta.commits": 5}


class FixedClock:
    def __init__(self, at: datetime):
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def _row(db, table_id: int):
    with db.transaction() as session:
        return TableRepo(session).get(table_id)


def _stored_time(db, table_id: int) -> datetime | None:
    """The table's tick_due_at as next_tick_at computes it from the digest and policy it stores."""
    row = _row(db, table_id)
    return next_tick_at(TimelineDigest.from_state(row.planner_state, ALL_SERVICES.services),
                        TablePolicy.from_stored(row.policies), ALL_SERVICES, is_mor=row.table_type == "MERGE_ON_READ")


def _evaluated(monkeypatch, planner: Planner) -> list[int]:
    """The tables the periodic trigger reads the digest of."""
    seen: list[int] = []
    real = planner._tick_rows

    def recording(rows):
        seen.extend(row.id for row in rows)
        return real(rows)

    monkeypatch.setattr(planner, "_tick_rows", recording)
    return seen


def test_a_time_based_compaction_is_planned_by_the_tick_at_its_time_and_not_before(db, tmp_path, monkeypatch):
    clock = FixedClock(datetime.now(UTC))
    hourly = TrackedTable(db, tmp_path / "hourly", policies=HOURLY)
    by_count = TrackedTable(db, tmp_path / "by_count", policies=BY_COUNT)
    p = Planner(db, ALL_SERVICES, clock=clock)
    first = None
    for ts in (10, 20):
        instant = hourly.write([rec(i, ts) for i in range(3)])
        first = first or instant
        by_count.write([rec(i, ts) for i in range(3)])
    assert p.handle_events_of([hourly.id, by_count.id]) == [hourly.id, by_count.id]
    # the event pass stored the time with the digest: an hour after the first delta commit; never by time alone
    due = _row(db, hourly.id).tick_due_at
    zone = hourly.table().config.timeline_zone
    assert due == _stored_time(db, hourly.id) == instant_to_datetime(first, zone) + timedelta(hours=1)
    assert _row(db, by_count.id).tick_due_at is None is _stored_time(db, by_count.id)

    evaluated = _evaluated(monkeypatch, p)
    clock.at = due - timedelta(microseconds=1)
    assert p.tick() == 0 and hourly.tasks() == [] and evaluated == [], "nothing is due: no table is read"
    clock.at = due
    assert p.tick() == 1 and evaluated == [hourly.id], "only the due table is read"
    [task] = hourly.tasks()
    assert task.service == "compaction"
    assert _row(db, hourly.id).tick_due_at == _stored_time(db, hourly.id), "the tick's pass stores it too"
    assert by_count.tasks() == []


def test_a_table_the_tick_finds_not_due_gets_its_time_back_unless_a_pass_holds_it(db, tmp_path):
    clock = FixedClock(datetime.now(UTC))
    a = TrackedTable(db, tmp_path / "a", policies=HOURLY)
    b = TrackedTable(db, tmp_path / "b", policies=HOURLY)
    p = Planner(db, ALL_SERVICES, clock=clock)
    for t in (a, b):
        t.write([rec(i, 10) for i in range(3)])
    assert sorted(p.handle_events_of([a.id, b.id])) == sorted([a.id, b.id])
    times = {t.id: _row(db, t.id).tick_due_at for t in (a, b)}
    assert all(times[t] > clock.at for t in times)
    with db.transaction() as session:  # as a PATCH of the policies, or the migration, asks for a look
        session.execute(text("UPDATE tables SET tick_due_at = :at"), {"at": clock.at - timedelta(seconds=1)})
    with locked_for_planning(db, b.id) as (_, held):  # a pass holds b meanwhile
        assert held is not None
        assert p.tick() == 0
    assert _row(db, a.id).tick_due_at == times[a.id]
    assert _row(db, b.id).tick_due_at == clock.at - timedelta(seconds=1), "a held table is left to its pass"
    assert p.tick() == 0
    assert _row(db, b.id).tick_due_at == times[b.id]


def test_a_disabled_table_forgets_its_digest_and_its_time(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=HOURLY)
    p = Planner(db, ALL_SERVICES)
    t.write([rec(i, 10) for i in range(3)])
    assert p.handle_events(t.id) and _row(db, t.id).tick_due_at is not None
    with db.transaction() as session:
        TableRepo(session).update(t.id, enabled=False)
    t.write([rec(i, 20) for i in range(3)])
    assert p.handle_events(t.id)
    row = _row(db, t.id)
    assert (row.planner_state, row.tick_due_at) == ({}, None)
