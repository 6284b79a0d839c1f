"""The table services the planner schedules on its own: clustering only when asked for (as in Hudi: by
TMS_PLANNER_SERVICES for every table, or by the table's policy or template for it alone), clean once enough
writes landed since the last one, each recorded as one task."""
import pytest
from planner_db_support import TrackedTable, pending_plans, planner
from planning_support import rec, run_compaction

from tms.config import Settings
from tms.db import TableRepo, TemplateRepo
from tms.hudi.timeline.serde import parse_cleaner_plan
from tms.planning.decisions import PlannerOptions

CLUSTER_EVERY_2 = {"hoodie.clustering.async.max.commits": 2}
# What the planner of `tms up` (and of any deployment that leaves TMS_PLANNER_SERVICES unset) schedules.
DEFAULT_SERVICES = tuple(Settings.model_fields["planner_services"].default)


def _options(*services: str, clean_commits: int = 1000) -> PlannerOptions:
    return PlannerOptions(services=frozenset(services), clean_commits=clean_commits)


def _upserts(t: TrackedTable, p, commits: int, *, first: bool = True) -> None:
    """`commits` writes (an insert if `first`, then upserts of the same keys), each reported and handled as it
    lands."""
    for n in range(commits):
        t.write([rec(i, 10 + n) for i in range(3)], "insert" if first and n == 0 else "upsert")
        assert p.handle_events(t.id)


def _services(t: TrackedTable) -> list[str]:
    return [task.service for task in t.tasks()]


def test_a_merge_on_read_table_without_policies_is_compacted_and_never_clustered_by_default(db, tmp_path):
    assert "clustering" not in DEFAULT_SERVICES
    t = TrackedTable(db, tmp_path / "t", table_type="MERGE_ON_READ")
    p = planner(db, options=_options(*DEFAULT_SERVICES))
    _upserts(t, p, 6)  # Hudi's default triggers: a compaction every 5 delta commits, a clustering every 4 writes
    assert "compaction" in _services(t) and "clustering" not in _services(t)
    assert all(action == "compaction" for _, action in pending_plans(t.table()))


@pytest.mark.parametrize("option", ["hoodie.clustering.async.enabled", "hoodie.clustering.inline",
                                    "hoodie.clustering.schedule.inline"])
def test_a_table_whose_policy_asks_for_clustering_is_clustered_under_the_default_services(db, tmp_path, option):
    t = TrackedTable(db, tmp_path / "t", table_type="MERGE_ON_READ", policies={option: True})
    p = planner(db, options=_options(*DEFAULT_SERVICES))
    _upserts(t, p, 4)  # Hudi's default clustering trigger: 4 writes
    assert _services(t) == ["clustering"]
    assert [action for _, action in pending_plans(t.table())] == ["replacecommit"]


def test_a_template_asking_for_clustering_turns_it_on_for_its_tables(db, tmp_path):
    with db.transaction() as session:
        TemplateRepo(session).put("clustered", path_prefix=str(tmp_path / "clustered"),
                                  policies={"hoodie.clustering.async.enabled": True})
    asked = TrackedTable(db, tmp_path / "clustered" / "t", table_type="MERGE_ON_READ")
    other = TrackedTable(db, tmp_path / "other" / "t", table_type="MERGE_ON_READ")
    p = planner(db, options=_options(*DEFAULT_SERVICES))
    _upserts(asked, p, 4)
    _upserts(other, p, 4)
    assert _services(asked) == ["clustering"] and _services(other) == []


def test_an_explicit_false_turns_clustering_off_where_the_planner_services_list_it(db, tmp_path):
    """TMS_PLANNER_SERVICES with clustering keeps its meaning (every table not saying otherwise is clustered),
    and a table's policy setting clustering false is not."""
    every = _options("compaction", "clustering", "clean", "rollback")
    off = TrackedTable(db, tmp_path / "off", table_type="MERGE_ON_READ",
                       policies={"hoodie.clustering.async.enabled": False})
    unset = TrackedTable(db, tmp_path / "unset", table_type="MERGE_ON_READ")
    p = planner(db, options=every)
    _upserts(off, p, 4)
    _upserts(unset, p, 4)
    assert _services(off) == [] and _services(unset) == ["clustering"]


def test_a_policy_asking_for_clustering_later_turns_it_on_from_the_next_pass(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", table_type="COPY_ON_WRITE", policies=CLUSTER_EVERY_2)
    p = planner(db, options=_options(*DEFAULT_SERVICES))
    _upserts(t, p, 2)
    assert _services(t) == []
    with db.transaction() as session:
        TableRepo(session).update(t.id, policies={**CLUSTER_EVERY_2, "hoodie.clustering.async.enabled": True})
    _upserts(t, p, 1, first=False)
    assert _services(t) == ["clustering"]


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
