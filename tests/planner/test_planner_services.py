"""The table services the planner schedules on its own: clustering only when asked for (as in Hudi), clean
once enough writes landed since the last one, each recorded as one task."""
from planner_db_support import TrackedTable, pending_plans, planner
from planning_support import rec, run_compaction

from tms.hudi.timeline.serde import parse_cleaner_plan
from tms.planning.decisions import PlannerOptions

CLUSTER_EVERY_2 = {"hoodie.clustering.async.max.commits": 2}


def _options(*services: str, clean_commits: int = 1000) -> PlannerOptions:
    return PlannerOptions(services=frozenset(services), clean_commits=clean_commits)


def test_clustering_is_planned_only_when_the_planner_schedules_it(db, tmp_path):
    for services, expected in ((("compaction", "clean", "rollback"), []),
                               (("compaction", "clustering", "clean", "rollback"), ["clustering"])):
        t = TrackedTable(db, tmp_path / "-".join(services), table_type="COPY_ON_WRITE", policies=CLUSTER_EVERY_2)
        p = planner(db, options=_options(*services))
        t.write([rec(i, 10) for i in range(3)], "insert")
        t.write([rec(i, 10) for i in range(3, 6)], "insert")
        assert p.handle_events(t.id)
        assert [task.service for task in t.tasks()] == expected
        assert [action for _, action in pending_plans(t.table())] == ["replacecommit"] * len(expected)


def test_a_clean_is_attempted_every_few_writes_and_recorded(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", table_type="COPY_ON_WRITE",
                     policies={"hoodie.cleaner.commits.retained": 1})
    p = planner(db, options=_options("clean", clean_commits=3))
    t.write([rec(i, 10) for i in range(3)], "insert")
    t.write([rec(i, 20) for i in range(3)])
    assert p.handle_events(t.id) and t.tasks() == []
    t.write([rec(i, 30) for i in range(3)])  # the third write since the table began: a clean is attempted
    assert p.handle_events(t.id)
    [task] = t.tasks()
    assert task.service == "clean" and task.plan_stats["operations"] == 3  # one per partition
    plan = parse_cleaner_plan(t.table().timeline.read_plan(task.instant))
    assert sum(len(files) for files in plan.file_paths_to_be_deleted_per_partition.values()) == 3
    t.write([rec(i, 40) for i in range(3)])
    assert p.handle_events(t.id) and len(t.tasks()) == 1, "a pending clean: not another one"


def test_a_clean_attempted_too_early_counts_the_compaction_that_completes_after_it(db, tmp_path):
    """Issue 36: a clean found nothing to clean while the compaction planned in the same pass was pending;
    the compaction completed after that attempt with an older instant time, which the re-armed trigger did
    not count, so the clean it made possible was never planned once the writer stopped."""
    t = TrackedTable(db, tmp_path / "t", policies={"hoodie.cleaner.commits.retained": 1,
                                                   "hoodie.compact.inline.max.delta.commits": 3})
    p = planner(db, options=_options("compaction", "clean", "rollback", clean_commits=3))
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(i, 20) for i in range(6)])
    t.write([rec(i, 30) for i in range(6)])
    assert p.handle_events(t.id)
    [compaction] = t.tasks()  # the clean was attempted too: nothing to clean while the slices were the latest
    assert compaction.service == "compaction"
    run_compaction(t.table(), compaction.instant)  # the worker: no event reports it
    t.write([rec(i, 40) for i in range(6)])
    t.write([rec(i, 50) for i in range(6)])  # the writer's last write
    assert p.handle_events(t.id) and len(t.tasks()) == 1
    p.scan()  # the reconciliation scan reads the completed compaction
    [_, clean] = t.tasks()
    assert clean.service == "clean", "three writes completed since the attempt: the compaction and two deltas"
    plan = parse_cleaner_plan(t.table().timeline.read_plan(clean.instant))
    assert sum(len(files) for files in plan.file_paths_to_be_deleted_per_partition.values()) >= 3
