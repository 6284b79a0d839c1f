"""Archival planned by the planner: one archive task (its instant naming the request, its plan the latest instant
Hudi's rule archives through and the table's policy) once the active timeline is over hoodie.keep.max.commits,
never a second while one waits; with hoodie.archive.automatic=false only on an operator's request."""
from __future__ import annotations

from planner_db_support import TrackedTable, planner
from planning_support import rec

from tms.db import TableRepo, TaskState
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
