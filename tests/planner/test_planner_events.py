"""The event-driven path: a table's events are processed under its planning lock; a due compaction is
planned on the timeline first and then recorded as exactly one task; handling an event that makes nothing
due does not read the timeline."""
from planner_db_support import ALL_SERVICES, TrackedTable, pending_plans, planner
from planning_support import rec

from planner.runner import Planner
from tms.db import AlertRepo, EventRepo, TableRepo, TaskState
from tms.hudi.timeline.serde import parse_compaction_plan

EVERY_3 = {"hoodie.compact.inline.max.delta.commits": 3}


def test_compaction_is_planned_after_max_delta_commits_and_recorded_once(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", priority=7, queue="big")  # Hudi's default: every 5 delta commits
    p = planner(db)
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(i, 20) for i in range(3)])
    assert p.handle_events(t.id) and t.tasks() == [] and t.unprocessed() == []

    t.write([rec(i, 30) for i in range(3)])
    t.write([rec(i, 40) for i in range(3)])
    assert p.handle_events(t.id) and t.tasks() == []
    t.write([rec(i, 50) for i in range(3)])  # the fifth delta commit
    assert p.handle_events(t.id)

    [task] = t.tasks()
    plans = pending_plans(t.table())
    assert plans == [(task.instant, "compaction")], "the plan is on the timeline, with one task"
    plan = parse_compaction_plan(t.table().timeline.read_plan(task.instant))
    assert task.service == "compaction" and task.state == TaskState.RUNNABLE and task.blockers == []
    assert (task.priority, task.queue, task.target_instant) == (7, "big", None)
    assert task.plan_stats["operations"] == len(plan.operations) == 3
    assert len(task.plan_stats["operation_bytes"]) == 3
    assert task.plan_stats["total_bytes"] == sum(task.plan_stats["operation_bytes"]) > 0
    assert task.plan_stats["largest_file_group_bytes"] == max(task.plan_stats["operation_bytes"])
    assert t.unprocessed() == []

    t.write([rec(i, 60) for i in range(3)])  # still due by Hudi's count, but every file group is planned
    t.report(t.write([rec(0, 70)]), "completed")  # and a duplicate hint
    assert p.handle_events(t.id)
    assert [x.id for x in t.tasks()] == [task.id] and pending_plans(t.table()) == plans


def test_an_event_that_makes_nothing_due_does_not_read_the_timeline(db, tmp_path, monkeypatch):
    t = TrackedTable(db, tmp_path / "t", policies={"hoodie.compact.inline.max.delta.commits": 100})
    p = planner(db)
    t.write([rec(i, 10) for i in range(3)], "insert")
    p.handle_events(t.id)  # first sight: the table is loaded and its digest built

    with db.transaction() as session:
        cached = p.cache.get(TableRepo(session).get(t.id)).table  # the planner's own table object
    reads = []
    for method in ("names", "listdir", "read_bytes", "open", "exists", "info"):
        monkeypatch.setattr(cached.storage, method, lambda *a, _m=method, **k: reads.append(_m))
    for ts in range(20, 25):
        t.write([rec(0, ts)])
        t.report(t.write([rec(1, ts)], leave_inflight=True, report=False), "requested")
        assert p.handle_events(t.id)
    assert reads == [] and t.tasks() == []
    with db.transaction() as session:
        state = TableRepo(session).get(t.id).planner_state
    assert len(state["counted"]["compaction"]) == 1 + 10 and len(state["pending_writes"]) == 5


def test_planning_passes_take_a_watched_timeline_s_changes_and_only_the_scan_lists_it(db, tmp_path, monkeypatch):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    p = planner(db)
    t.write([rec(i, 10) for i in range(6)], "insert")
    p.handle_events(t.id)  # first sight: loaded (listed once) and watched
    with db.transaction() as session:
        cached = p.cache.get(TableRepo(session).get(t.id)).table
    assert cached.timeline.changes is not None
    listings = []
    real = cached.storage.names
    monkeypatch.setattr(cached.storage, "names", lambda rel: listings.append(rel) or real(rel))

    t.write([rec(i, 20) for i in range(3)])
    t.write([rec(i, 30) for i in range(3)])
    assert p.handle_events(t.id)  # the third delta commit: a planning pass
    [task] = t.tasks()
    assert task.service == "compaction" and pending_plans(t.table()) == [(task.instant, "compaction")]
    t.write([rec(i, 40) for i in range(3)], leave_inflight=True, report=False)  # no event: the scan's business
    assert listings == [], "the passes took the timeline's changes from the feed"

    assert p.reconcile(t.id)
    assert listings == [cached.config.timeline_dir], "the reconciliation scan lists the timeline"
    with db.transaction() as session:
        state = TableRepo(session).get(t.id).planner_state
    assert len(state["pending_writes"]) == 1


def test_a_planning_pass_on_a_listed_timeline_lists_it_once_before_it_plans(db, tmp_path, monkeypatch):
    """Without a change feed (object stores), each listing is a LIST per 1,000 instant files: the pass lists
    the timeline once under the lock, and once more only to write its plan (the create's own check), each time
    only the folder's tail (the names after a key, S3's `start-after`: see tail_listing)."""
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    p = Planner(db, ALL_SERVICES, watch_timelines=False)
    t.write([rec(i, 10) for i in range(6)], "insert")
    p.handle_events(t.id)
    with db.transaction() as session:
        cached = p.cache.get(TableRepo(session).get(t.id)).table
    assert cached.timeline.changes is None
    listings = []
    real, real_tail = cached.storage.names, cached.storage.names_after
    monkeypatch.setattr(cached.storage, "names", lambda rel: listings.append(("whole", rel)) or real(rel))
    monkeypatch.setattr(cached.storage, "names_after",
                        lambda rel, key: listings.append(("tail", rel)) or real_tail(rel, key))

    t.write([rec(i, 20) for i in range(3)])
    t.write([rec(i, 30) for i in range(3)])
    assert p.handle_events(t.id)  # the third delta commit: a planning pass that plans a compaction
    [task] = t.tasks()
    assert task.service == "compaction"
    assert listings == [("tail", cached.config.timeline_dir)] * 2, "under the lock, then the plan's create"


def test_a_table_locked_by_another_planner_is_skipped(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    for ts in (10, 20, 30):
        t.write([rec(i, ts) for i in range(3)])
    with db.transaction() as session:
        assert TableRepo(session).lock_for_planning(t.id) is not None  # another planner at work on it
        assert planner(db).handle_events(t.id) is False
        assert len(EventRepo(session).unprocessed(t.id)) == 3
    assert planner(db).handle_events(t.id) and len(t.tasks()) == 1


def test_events_of_a_disabled_table_are_dropped_and_it_is_reconciled_when_enabled(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    p = planner(db)
    t.write([rec(i, 10) for i in range(3)])
    p.handle_events(t.id)
    with db.transaction() as session:
        TableRepo(session).update(t.id, enabled=False)
    for ts in (20, 30):
        t.write([rec(i, ts) for i in range(3)])
    assert p.handle_events(t.id) and t.unprocessed() == [] and t.tasks() == []

    with db.transaction() as session:
        TableRepo(session).update(t.id, enabled=True)
    t.write([rec(0, 40)])
    assert p.handle_events(t.id)
    assert [task.service for task in t.tasks()] == ["compaction"]


def test_an_unreadable_table_raises_an_alert_and_its_events_are_handled(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    t.write([rec(i, 10) for i in range(3)])
    (tmp_path / "t" / ".hoodie" / "hoodie.properties").unlink()
    assert planner(db).handle_events(t.id)
    with db.transaction() as session:
        alerts, _ = AlertRepo(session).find(table_id=t.id)
    assert [a.kind for a in alerts] == ["table_unreadable"] and t.unprocessed() == []


def test_many_tables_events_are_taken_together_and_a_due_one_is_planned(db, tmp_path):
    """handle_events_of: the tables whose events make nothing due get their digests in one transaction; a
    table whose events make a compaction due is planned; one another planner holds is left for later."""
    tables = [TrackedTable(db, tmp_path / f"t{n}", policies=EVERY_3) for n in range(4)]
    p = planner(db)
    for t in tables:
        t.write([rec(i, 10) for i in range(3)], "insert")
    assert sorted(p.handle_events_of([t.id for t in tables])) == sorted(t.id for t in tables)  # first sight
    for t in tables:
        t.write([rec(0, 20)])
    due = tables[0]
    for ts in (30, 40):
        due.write([rec(0, ts)])
    held = tables[3]
    with db.transaction() as session:  # another planner holds this one
        TableRepo(session).lock_for_planning(held.id)
        handled = p.handle_events_of([t.id for t in tables])
    assert sorted(handled) == sorted(t.id for t in tables[:3])
    assert [t.unprocessed() for t in tables[:3]] == [[], [], []] and len(held.unprocessed()) == 1
    [task] = due.tasks()
    assert task.service == "compaction" and pending_plans(due.table()) == [(task.instant, "compaction")]
    assert [t.tasks() for t in tables[1:]] == [[], [], []]
    assert p.handle_events_of([held.id]) == [held.id] and held.unprocessed() == []


def test_a_truncated_latest_commit_raises_table_unreadable_naming_the_file(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    t.write([rec(i, 10) for i in range(3)])
    t.write([rec(i, 20) for i in range(3)])
    timeline = tmp_path / "t" / ".hoodie"
    latest = max((f for f in timeline.rglob("*.deltacommit") if "metadata" not in f.parts),
                 key=lambda f: f.name)
    latest.write_bytes(latest.read_bytes()[:20])  # truncated (a writer that died while completing it)
    assert planner(db).reconcile(t.id)
    with db.transaction() as session:
        alerts, _ = AlertRepo(session).find(table_id=t.id, open_only=True)
    assert [a.kind for a in alerts] == ["table_unreadable"]
    assert latest.name in alerts[0].message, alerts[0].message
