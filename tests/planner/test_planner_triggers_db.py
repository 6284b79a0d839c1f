"""The periodic trigger and the reconciliation scan: time-based compaction triggers fire without any
event, lost callbacks and writers that send none are caught by the scan, and the planner role process
(PlannerService) runs both on its scheduler beside the event-driven path."""
import threading
import time
from dataclasses import replace
from datetime import timedelta

from planner_db_support import ALL_SERVICES, Clock, TrackedTable, pending_plans, planner
from planning_support import rec, told_writers_zone, writes_in

from planner.process import PlannerService
from tms.config import Settings
from tms.db import InstanceRepo, TableRepo, TaskState

HOURLY = {"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED", "hoodie.compact.inline.max.delta.seconds": 3600}


def test_a_time_elapsed_trigger_fires_from_the_periodic_job(db, tmp_path):
    clock = Clock()
    t = TrackedTable(db, tmp_path / "t", policies=HOURLY)
    p = planner(db, clock)
    for ts in (10, 20):
        t.write([rec(i, ts) for i in range(3)])
    assert p.handle_events(t.id) and p.tick() == 0 and t.tasks() == []
    clock.advance(minutes=59)
    assert p.tick() == 0
    clock.advance(minutes=2)
    assert p.tick() == 1
    [task] = t.tasks()
    assert task.service == "compaction" and task.state == TaskState.RUNNABLE
    assert p.tick() == 0, "nothing twice"


def test_a_time_elapsed_trigger_counts_in_the_writers_zone(db, tmp_path):
    """Writers in Shanghai on a LOCAL table (Hudi's default), TMS told so: the hourly trigger fires an hour
    after their delta commits by their clock, and the compaction comes after them on the timeline."""
    shanghai = told_writers_zone("Asia/Shanghai")
    clock = Clock()
    t = TrackedTable(db, tmp_path / "t", policies=HOURLY, context=shanghai)
    writer = writes_in(t, "Asia/Shanghai")
    writer.ago = timedelta(minutes=30)
    deltas = [t.write([rec(i, ts) for i in range(3)]) for ts in (10, 20)]
    p = planner(db, clock, replace(ALL_SERVICES, context=shanghai))
    assert p.handle_events(t.id) and p.tick() == 0 and t.tasks() == []
    clock.advance(minutes=29)
    assert p.tick() == 0
    clock.advance(minutes=2)
    assert p.tick() == 1
    [task] = t.tasks()
    assert task.service == "compaction" and task.instant > max(deltas)


def test_a_lost_callback_is_caught_by_the_reconciliation_scan(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies={"hoodie.compact.inline.max.delta.commits": 3})
    p = planner(db)
    for ts in (10, 20):
        t.write([rec(i, ts) for i in range(3)])
    assert p.handle_events(t.id)
    t.write([rec(i, 30) for i in range(3)], report=False)  # its callback never arrives
    assert p.tick() == 0 and t.tasks() == []
    assert p.scan() == 1
    [task] = t.tasks()
    assert pending_plans(t.table()) == [(task.instant, "compaction")]
    assert p.scan(fresh_seconds=600) == 0, "reconciled a moment ago (by any planner): skipped"
    assert p.scan() == 1 and len(t.tasks()) == 1, "nothing planned twice"


def test_a_table_whose_writer_sends_no_events_is_planned_by_the_scan(db, tmp_path):
    clock = Clock()
    t = TrackedTable(db, tmp_path / "t", policies={"hoodie.compact.inline.max.delta.commits": 2})
    for ts in (10, 20):
        t.write([rec(i, ts) for i in range(3)], report=False)
    failed = t.write([rec(0, 30)], leave_inflight=True, report=False)  # and its writer died
    p = planner(db, clock)
    assert p.tick() == 0, "never seen: the scan's business"
    clock.advance(hours=2)
    assert p.scan() == 1
    tasks = {task.service: task for task in t.tasks()}
    assert set(tasks) == {"compaction", "rollback"} and tasks["rollback"].target_instant == failed
    # the failed write holds the compaction until its rollback has run (invariant 3)
    assert tasks["rollback"].state == TaskState.RUNNABLE
    assert (tasks["compaction"].state, tasks["compaction"].blockers) == (TaskState.BLOCKED, [failed])


def _wait_for(condition, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_planner_process_plans_on_events_and_on_its_periodic_trigger(db, tmp_path):
    clock = Clock()
    settings = Settings(database_url=db.url, planner_poll_seconds=0.05, planner_tick_seconds=0.2,
                        planner_scan_seconds=3600, heartbeat_seconds=0.1)
    service = PlannerService(db, settings, planner(db, clock))
    events = TrackedTable(db, tmp_path / "events", policies={"hoodie.compact.inline.max.delta.commits": 2})
    hourly = TrackedTable(db, tmp_path / "hourly", policies=HOURLY)
    thread = threading.Thread(target=service.run)
    thread.start()
    try:
        for ts in (10, 20):
            events.write([rec(i, ts) for i in range(3)])
            hourly.write([rec(i, ts) for i in range(3)])
        _wait_for(lambda: len(events.tasks()) == 1 and not hourly.unprocessed())
        assert hourly.tasks() == []
        with db.transaction() as session:
            assert any(i.id == service.id and i.roles == ["planner"] for i in InstanceRepo(session).list())
        clock.advance(hours=2)
        _wait_for(lambda: len(hourly.tasks()) == 1)
    finally:
        service.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
    with db.transaction() as session:
        assert all(i.id != service.id for i in InstanceRepo(session).list())
        assert TableRepo(session).get(hourly.id).planned_at is not None
