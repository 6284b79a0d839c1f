"""Compensation through the database (invariant 3): a v6 compaction planned while delta commits before it
are in flight is recorded as a BLOCKED task; each event of a blocker syncs the plan on disk; the task
becomes RUNNABLE only when no blocker is left. A plan that can no longer be synced raises an alert and its
task is left alone."""
from planner_db_support import Clock, TrackedTable, planner
from planning_support import rec, run_compaction

from tms.db import AlertRepo, TaskState
from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_compaction_plan
from tms.planning.compensation import BLOCKERS_KEY

EVERY_COMMIT = {"hoodie.compact.inline.max.delta.commits": 1,
                # writers silent for 10 s are gone (the test moves the planner's clock instead of waiting)
                "hoodie.client.heartbeat.interval_in_ms": 5000, "hoodie.client.heartbeat.tolerable.misses": 2}


def _plan_files(table, tc) -> dict[str, list[str]]:
    return {op.partition_path: op.delta_file_paths
            for op in parse_compaction_plan(table.timeline.read_plan(tc)).operations}


def _logs_of(t, instant) -> dict[str, list[str]]:
    table = t.table()
    stats = table.timeline.commit_metadata(table.timeline.get(instant)).write_stats()
    return {s.partition_path: s.log_files for s in stats if s.log_files}


def _held_compaction(db, tmp_path, clock):
    """Three file groups with a completed log file each; dc1 (sf) and dc2 (nyc) in flight, then a delta
    commit that makes compaction due: the plan at Tc is held by dc1 and dc2."""
    t = TrackedTable(db, tmp_path / "t", version=6, policies=EVERY_COMMIT, new_log_file_per_commit=True)
    p = planner(db, clock)
    t.write([rec(i, 10) for i in range(9)], "insert", report=False)
    dc1 = t.write([rec(0, 30, "late"), rec(3, 30, "late")], leave_inflight=True)
    dc2 = t.write([rec(1, 30, "doomed")], leave_inflight=True)
    t.write([rec(i, 20) for i in range(6, 9)])
    assert p.handle_events(t.id)
    [task] = t.tasks()
    return t, p, task, dc1, dc2


def test_a_held_task_is_runnable_only_when_its_blockers_resolved_with_the_synced_plan_on_disk(db, tmp_path):
    clock = Clock()
    t, p, task, dc1, dc2 = _held_compaction(db, tmp_path, clock)
    tc = task.instant
    assert task.service == "compaction" and task.state == TaskState.BLOCKED and task.blockers == [dc1, dc2]
    files = _plan_files(t.table(), tc)
    late, doomed = _logs_of(t, dc1)["city=sf"], _logs_of(t, dc2)["city=nyc"]
    assert not set(late) & set(files["city=sf"]) and not set(doomed) & set(files["city=nyc"])

    t.write([rec(6, 40)])  # after Tc: into the new slice, blocks nothing
    assert p.handle_events(t.id)
    assert t.tasks()[0].state == TaskState.BLOCKED and _plan_files(t.table(), tc) == files

    t.complete(dc1)  # its event syncs the plan
    assert p.handle_events(t.id)
    [held] = t.tasks()
    assert held.state == TaskState.BLOCKED and held.blockers == [dc2]
    synced = _plan_files(t.table(), tc)
    assert set(late) <= set(synced["city=sf"]), "dc1's late log file joined the plan on disk"
    assert held.plan_stats["total_bytes"] > task.plan_stats["total_bytes"]

    # dc2's writer died: once its heartbeat expired, the periodic trigger plans its rollback. The hold
    # ends only when that rollback has run and removed dc2 from the timeline.
    assert p.tick() == 0
    clock.advance(seconds=60)
    assert p.tick() == 1
    compaction, rollback = t.tasks()
    assert (rollback.service, rollback.target_instant, rollback.state) == ("rollback", dc2, TaskState.RUNNABLE)
    assert compaction.state == TaskState.BLOCKED and compaction.blockers == [dc2]
    execute_instant(t.table(), rollback.instant, LocalRunner(1))
    assert t.table().timeline.get(dc2) is None
    p.tick()
    compaction, _ = t.tasks()
    assert compaction.state == TaskState.RUNNABLE and compaction.blockers == []
    final = _plan_files(t.table(), tc)
    assert set(late) <= set(final["city=sf"]) and not set(doomed) & set(final["city=nyc"])
    assert BLOCKERS_KEY not in parse_compaction_plan(t.table().timeline.read_plan(tc)).extra_metadata


def test_a_held_plan_found_inflight_raises_an_alert_and_its_task_is_left_alone(db, tmp_path):
    t, p, task, dc1, _ = _held_compaction(db, tmp_path, Clock())
    table = t.table()
    table.timeline.transition_to_inflight(table.timeline.states_of(task.instant)[State.REQUESTED])
    before = table.timeline.read_plan(task.instant)
    t.complete(dc1)
    assert p.handle_events(t.id)
    [same] = t.tasks()
    assert (same.state, same.blockers, same.version) == (task.state, task.blockers, task.version)
    assert t.table().timeline.read_plan(task.instant) == before
    with db.transaction() as session:
        [alert], _ = AlertRepo(session).find(table_id=t.id)
    assert alert.kind == "compensation_failed" and alert.task_id == task.id and "inflight while held" in alert.message


def test_v8_compaction_is_never_held(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", version=8, policies=EVERY_COMMIT)
    t.write([rec(i, 10) for i in range(9)], "insert", report=False)
    t.write([rec(0, 30)], leave_inflight=True)
    t.write([rec(i, 20) for i in range(3)])
    assert planner(db).handle_events(t.id)
    [task] = t.tasks()
    assert task.state == TaskState.RUNNABLE and task.blockers == []
    run_compaction(t.table(), task.instant)
    t.check(hudi_rs=False)
