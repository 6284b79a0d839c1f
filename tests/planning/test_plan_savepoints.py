"""Savepoints as policy, days simulated by the time handed to the planning step: TMS savepoints the latest
write once per interval, keeps its newest N (never deleting a writer's savepoint), and clean keeps what they
keep."""
from datetime import UTC, datetime, timedelta

from planning_support import ModelledTable, policy, rec, run_clean

from tms.hudi.table.savepoint import create_savepoint, read_savepoint
from tms.planning.clean import plan_clean
from tms.planning.savepoints import apply_savepoint_policy

DAY0 = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)


def _savepoints(t: ModelledTable) -> dict[str, str]:
    table = t.table()
    return {s.timestamp: read_savepoint(table, s.timestamp).savepointed_by for s in table.timeline.savepoints()}


def test_daily_savepoints_keep_the_newest_two_and_leave_a_writers_alone(tmp_path):
    t = ModelledTable(tmp_path / "t", table_type="COPY_ON_WRITE", version=8, partitioned=False)
    daily = policy(tms__savepoint__interval__hours=24, tms__savepoint__keep=2,
                   hoodie__cleaner__policy="KEEP_LATEST_FILE_VERSIONS", hoodie__cleaner__fileversions__retained=1)
    writer_made = t.write([rec(0, 1), rec(1, 1)], "insert")
    create_savepoint(t.table(), user="writer")
    assert apply_savepoint_policy(t.table(), policy(), DAY0).create is None  # no policy: nothing

    day = []
    for n in range(3):
        day.append(t.write([rec(0, 10 + n)]))
        made = apply_savepoint_policy(t.table(), daily, DAY0 + timedelta(days=n))
        assert made.create == day[n]
        later = apply_savepoint_policy(t.table(), daily, DAY0 + timedelta(days=n, hours=23))
        assert later.create is None and not later.delete  # once a day
    assert _savepoints(t) == {writer_made: "writer", day[1]: "tms", day[2]: "tms"}

    t.write([rec(0, 50)])
    planned = plan_clean(t.table(), daily, DAY0 + timedelta(days=3))
    run_clean(t.table(), planned.instant)
    kept = {fs.base_instant for g in t.table().file_system_view().file_groups() for fs in g.slices}
    assert {writer_made, day[1], day[2]} <= kept and day[0] not in kept
    t.check()
