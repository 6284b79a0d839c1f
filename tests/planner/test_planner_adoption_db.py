"""Adoption through the database: a plan on the timeline without a task — left by a crash between writing
the plan and recording its task, or scheduled by a writer — becomes one task; nothing is planned twice."""
import pytest
from planner_db_support import TrackedTable, pending_plans, planner
from planning_support import now, policy, rec

from tms.db import TaskRepo, TaskState
from tms.planning.compaction import plan_compaction

EVERY_3 = {"hoodie.compact.inline.max.delta.commits": 3}


def test_a_crash_between_the_plan_and_its_task_is_repaired_by_adoption(db, tmp_path, monkeypatch):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    for ts in (10, 20):
        t.write([rec(i, ts) for i in range(3)])
    p = planner(db)
    p.handle_events(t.id)
    t.write([rec(i, 30) for i in range(3)])  # compaction is due

    def crash(*args, **kwargs):
        raise RuntimeError("the planner died")

    with monkeypatch.context() as m:
        m.setattr(TaskRepo, "create", crash)
        with pytest.raises(RuntimeError):
            p.handle_events(t.id)
    [(tc, _)] = pending_plans(t.table())
    assert t.tasks() == [] and len(t.unprocessed()) == 1, "the plan is written, its task and events rolled back"

    assert p.handle_events(t.id)  # the same event again
    [task] = t.tasks()
    assert (task.instant, task.service, task.state) == (tc, "compaction", TaskState.RUNNABLE)
    assert task.plan_stats["operations"] == 3
    assert pending_plans(t.table()) == [(tc, "compaction")], "adopted, not planned again"
    assert p.reconcile(t.id) and len(t.tasks()) == 1


def test_a_plan_a_writer_scheduled_is_adopted_on_its_event(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies={"hoodie.compact.inline.max.delta.commits": 100})
    p = planner(db)
    for ts in (10, 20):
        t.write([rec(i, ts) for i in range(3)])
    p.handle_events(t.id)
    scheduled = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now())
    t.report(scheduled.instant, "requested", action="compaction")
    assert p.handle_events(t.id)
    [task] = t.tasks()
    assert (task.instant, task.service, task.state) == (scheduled.instant, "compaction", TaskState.RUNNABLE)
    assert task.plan_stats["operation_bytes"] == list(scheduled.stats.operation_bytes)
