"""Archival planned by the planner: one archive task (its instant naming the request, its plan the latest instant
Hudi's rule archives through and the table's policy) once the active timeline is over hoodie.keep.max.commits,
never a second while one waits; with hoodie.archive.automatic=false only on an operator's request."""
from __future__ import annotations

from planner_db_support import TrackedTable, planner
from planning_support import rec

from tms.db import TableRepo, TaskRepo, TaskState
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import (
    CommitMetadata,
    CompactionPlan,
    serialize_commit_metadata,
    serialize_compaction_plan,
)
from tms.plan_pass.on_request import OnRequestPlanner
from tms.plan_pass.table_cache import TableCache
from tms.planning.decisions import PlannerOptions
from tms.table_service import TableService

# keep 2..4 commits; the cleaner retains 1 (so it does not widen the limits)
SMALL = {"hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4, "hoodie.cleaner.commits.retained": 1}
ARCHIVE_ONLY = PlannerOptions(services=frozenset({"archive"}), clean_commits=1000)


def _writes(t: TrackedTable, p, n: int) -> None:
    for _ in range(n):
        t.write([rec(0, 10)])
        assert p.handle_events(t.id)


def test_one_archive_task_is_planned_once_the_timeline_is_over_its_limit(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=SMALL, table_type="COPY_ON_WRITE", version=8)
    p = planner(db, options=ARCHIVE_ONLY)
    _writes(t, p, 4)
    assert t.tasks() == []  # 4 completed commits: within hoodie.keep.max.commits
    _writes(t, p, 1)
    [task] = t.tasks()
    completed = [i.timestamp for i in t.table().timeline.completed()]
    assert (task.service, task.state, task.plan_stats["archive_through"], task.plan_stats["instants"]) == (
        TableService.ARCHIVE, TaskState.RUNNABLE, completed[2], 3)
    assert task.plan_stats["policy"]["hoodie.keep.max.commits"] == 4  # the job archives by the table's policy
    assert task.instant not in completed  # it names the request: archival writes no instant
    _writes(t, p, 3)  # still over the limit, and the task still waits: no second one
    assert [x.id for x in t.tasks()] == [task.id]
    with db.transaction() as session:
        outlook = TableRepo(session).get(t.id).planner_state["services"]["archive"]
    assert outlook["reason"].startswith("8 completed commits on the active timeline (the limit is 4, "
                                        "hoodie.keep.max.commits), but the last archive attempt at ")
    assert f"planned nothing (due, but archive task {task.id} (RUNNABLE) has not finished yet)" in outlook["reason"]


def test_automatic_false_archives_only_on_request(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies={**SMALL, "hoodie.archive.automatic": False},
                     table_type="COPY_ON_WRITE", version=8)
    p = planner(db, options=ARCHIVE_ONLY)
    _writes(t, p, 6)
    assert t.tasks() == []
    [task] = OnRequestPlanner(db, ARCHIVE_ONLY, TableCache(2)).plan(t.id, TableService.ARCHIVE)
    assert task.service == TableService.ARCHIVE and task.plan_stats["instants"] == 4


def test_the_compaction_tms_ran_releases_archival_before_any_pass_reads_the_timeline(db, tmp_path):
    # Due over 6 commits; after an attempt that archived nothing, again only 4 commits later (max - min)
    t = TrackedTable(db, tmp_path / "t", policies={**SMALL, "hoodie.keep.max.commits": 6},
                     table_type="MERGE_ON_READ", version=8)
    p = planner(db, options=ARCHIVE_ONLY)
    tl = t.table().timeline
    plan = serialize_compaction_plan(CompactionPlan())
    held = tl.transition_to_inflight(tl.create_requested(Action.COMPACTION, plan)).timestamp  # holds every commit
    _writes(t, p, 7)
    assert TableService.ARCHIVE not in {x.service for x in t.tasks()}, "held back by the pending compaction"
    with db.transaction() as session:
        tasks = TaskRepo(session)
        task = tasks.for_instant(t.id, held) or tasks.create(
            table_id=t.id, service=TableService.COMPACTION, instant=held, state=TaskState.RUNNABLE)[0]
        tasks.transition(task.id, expected_state=TaskState(task.state), expected_version=task.version,
                         to=TaskState.SUCCEEDED)
    tl.complete(tl.states_of(held)[State.INFLIGHT], serialize_commit_metadata(CommitMetadata(), 8))
    _writes(t, p, 1)  # a writer's event: no pass has read the timeline since the compaction completed
    assert [x.service for x in t.tasks() if x.service == TableService.ARCHIVE] == [TableService.ARCHIVE]
