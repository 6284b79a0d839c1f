"""The planner carries out the savepoint policy on the passes it runs: a table with
`tms.savepoint.interval.hours` gets a TMS savepoint of its latest write, one per interval, `keep` of them."""
from planner_db_support import Clock, TrackedTable, planner
from planning_support import rec

from tms.hudi.table.savepoint import read_savepoint


def test_the_planner_savepoints_a_table_once_per_interval(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies={"tms.savepoint.interval.hours": 24, "tms.savepoint.keep": 1,
                                                   "hoodie.compact.inline.max.delta.commits": 1})
    clock = Clock()
    p = planner(db, clock)
    first = t.write([rec(i, 10) for i in range(6)], "insert")
    p.handle_events(t.id)
    assert [s.timestamp for s in t.table().timeline.savepoints()] == [first]
    assert read_savepoint(t.table(), first).savepointed_by == "tms"
    t.write([rec(i, 20) for i in range(3)])
    p.handle_events(t.id)
    assert [s.timestamp for s in t.table().timeline.savepoints()] == [first]  # not a day yet
    clock.advance(hours=25)
    latest = t.write([rec(i, 30) for i in range(3)])
    p.handle_events(t.id)
    assert [s.timestamp for s in t.table().timeline.savepoints()] == [latest]  # keep 1: the first went
