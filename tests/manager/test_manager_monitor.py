"""The alert rules as the leader evaluates them: one alert per type and subject, counted while its condition
holds and resolved by itself when it clears."""
from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text, update

from manager.monitor import MonitorContext, evaluate
from planner.runner import Planner
from tms.config import Settings
from tms.db import AlertRepo, InstanceRepo, TableRepo, TaskRepo, TaskState
from tms.db.models import Instance, Task
from tms.instance import JOB_TIMEOUT_FACT
from tms.leadership import LeaderLease
from tms.task_payload import PlanStatistics

S = TaskState


def _leader(db) -> tuple[LeaderLease, int]:
    lease = LeaderLease(db, "monitor-test", lease_seconds=30, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    assert epoch is not None
    return lease, epoch


def _table(db) -> int:
    with db.transaction() as session:
        return TableRepo(session).register(base_path="/nowhere/t", name="t", database="d",
                                           table_type="MERGE_ON_READ", table_version=6).id


def _alerts(db, kind: str):
    with db.transaction() as session:
        return AlertRepo(session).find(kind=kind)[0]


def test_a_hold_too_long_fires_once_counts_its_sightings_and_resolves_when_released(db):
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table_id, service="compaction", instant="20260101000000000",
                                           state=S.BLOCKED, blockers=["20251231000000000"])
    ctx = MonitorContext(Settings(monitor_hold_seconds=0.05), datetime.now(UTC), {})
    time.sleep(0.1)
    evaluate(lease, epoch, ctx)
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "held_too_long")
    assert (alert.state, alert.count, alert.subject, alert.task_id) == ("firing", 2, f"task:{task.id}", task.id)
    assert "20251231000000000" in alert.message
    with db.transaction() as session:
        TaskRepo(session).transition(task.id, expected_state=S.BLOCKED, expected_version=task.version,
                                     to=S.RUNNABLE, blockers=[])
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "held_too_long")
    assert alert.state == "resolved"


def test_a_backlog_growing_at_each_evaluation_fires_and_resolves_when_it_stops(db):
    lease, epoch = _leader(db)
    table_id = _table(db)
    ctx = MonitorContext(Settings(), datetime.now(UTC), {})
    for n in range(4):
        with db.transaction() as session:
            TaskRepo(session).create(table_id=table_id, service="clean", instant=f"2026010100000{n}000",
                                     state=S.RUNNABLE)
        evaluate(lease, epoch, ctx)
        assert bool(_alerts(db, "backlog_growing")) == (n == 3), n  # rising three times: four evaluations
    [alert] = _alerts(db, "backlog_growing")
    assert alert.subject == f"table:{table_id}" and "pending plans" in alert.message
    evaluate(lease, epoch, ctx)  # no new plan: not rising any more
    assert [a.state for a in _alerts(db, "backlog_growing")] == ["resolved"]


def test_a_timed_out_task_is_reported_with_the_timeout_its_worker_applied(db):
    """The worker's timeout is the worker's setting: the alert quotes what the worker recorded, not a manager
    setting of the same name."""
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table_id, service="compaction", instant="20260101000000000",
                                           state=S.RUNNABLE)
        session.execute(update(Task).where(Task.id == task.id).values(
            failure_kind="timeout", error="the job ran past its timeout of 3 s and was killed"))
    evaluate(lease, epoch, MonitorContext(Settings(worker_job_timeout_seconds=10_000), datetime.now(UTC), {}))
    [alert] = _alerts(db, "task_timeout")
    assert alert.task_id == task.id and "its timeout of 3 s" in alert.message and "10000 s" not in alert.message


def test_tasks_predicted_past_their_timeout_are_warned_of_before_they_time_out(db):
    """From the table's history (about 1.1 s per MB): a plan too big is warned of while it waits and while it
    runs; a run lasting far longer than its bytes explain is warned of while it runs; a small one is not."""
    lease, epoch = _leader(db)
    table_id = _table(db)
    mb = 2**20
    with db.transaction() as session:
        tasks = TaskRepo(session)
        for n, seconds in enumerate((100, 120, 110)):
            done, _ = tasks.create(table_id=table_id, service="compaction", instant=f"2025010100000{n}000",
                                   state=S.RUNNABLE, payload=PlanStatistics(total_bytes=100 * mb))
            claimed = tasks.claim(done.id, expected_version=done.version, owner="w", lease_seconds=60)
            tasks.finish(done.id, fencing_token=claimed.fencing_token, succeeded=True)
            session.execute(text("UPDATE tasks SET finished_at = started_at + make_interval(secs => :s) "
                                 "WHERE id = :id"), {"s": seconds, "id": done.id})
        made = {name: tasks.create(table_id=table_id, service="compaction", instant=f"2026010100000{n}000",
                                   state=S.RUNNABLE, payload=PlanStatistics(total_bytes=size * mb))[0]
                for n, (name, size) in enumerate([("big", 500), ("small", 50), ("slow", 60), ("big waiting", 500)])}
        for name in ("big", "small", "slow"):
            tasks.claim(made[name].id, expected_version=made[name].version, owner="w", lease_seconds=600)
        session.execute(text("UPDATE tasks SET started_at = now() - interval '290 seconds' WHERE id = :id"),
                        {"id": made["slow"].id})  # ~66 s expected, 290 s and still running
    # ~550 s predicted for the big ones against the 300 s timeout worker w applies (its heartbeat says so; the
    # manager's own setting is not the worker's), ~55 s for the small one: it is not warned of.
    with db.transaction() as session:
        InstanceRepo(session).heartbeat("w", roles=["worker"], host="h", pid=1, version="dev",
                                        info={JOB_TIMEOUT_FACT: 300})
        # A worker silent for an hour (not yet forgotten) applied a far longer timeout: a waiting task is judged
        # by the workers that may still claim it.
        InstanceRepo(session).heartbeat("gone", roles=["worker"], host="h", pid=2, version="dev",
                                        info={JOB_TIMEOUT_FACT: 100_000})
        session.execute(text("UPDATE instances SET heartbeat_at = now() - interval '1 hour' WHERE id = 'gone'"))
    evaluate(lease, epoch, MonitorContext(Settings(worker_job_timeout_seconds=10_000), datetime.now(UTC), {}))
    warned = {a.task_id: a for a in _alerts(db, "predicted_timeout")}
    assert set(warned) == {made[n].id for n in ("big", "slow", "big waiting")}
    assert 500 <= warned[made["big"].id].details["predicted_seconds"] <= 600
    assert "(waiting)" in warned[made["big waiting"].id].message
    slow = warned[made["slow"].id]
    assert "(running)" in slow.message and slow.details["predicted_seconds"] > 290
    assert slow.details["probability"] >= 0.7
    assert "past its timeout of 300 s" in slow.message


def _trips_table(db, fixture_tables, tmp_path, name: str, policies: dict) -> tuple[int, Path]:
    path = Path(shutil.copytree(fixture_tables["mor_v6_trips_8i1u"], tmp_path / name))
    with db.transaction() as session:
        table_id = TableRepo(session).register(base_path=str(path), name=name, database="d",
                                               table_type="MERGE_ON_READ", table_version=6, policies=policies).id
    return table_id, path


def _compactions(db, table_id: int) -> list:
    with db.transaction() as session:
        return [t for t in TaskRepo(session).find(table_id=table_id)[0] if t.service == "compaction"]


def test_a_table_with_compaction_due_and_none_planned_fires_not_scheduled_until_a_planner_plans_it(
        db, fixture_tables, tmp_path):
    lease, epoch = _leader(db)
    settings = Settings(database_url=db.url)
    planner = Planner.from_settings(db, settings, watch_timelines=False)
    not_due = {"hoodie.compact.inline.max.delta.commits": 100}
    lazy, _ = _trips_table(db, fixture_tables, tmp_path, "lazy", not_due)
    refused, refused_path = _trips_table(db, fixture_tables, tmp_path, "refused", not_due)
    disabled, _ = _trips_table(db, fixture_tables, tmp_path, "disabled", not_due)
    for table_id in (lazy, refused, disabled):
        assert planner.reconcile(table_id)  # the planner's digest of the timeline: not due, nothing planned
        assert _compactions(db, table_id) == []
    # An admin lowers the trigger while no planner runs: due since the fixture's second delta commit, long ago.
    with db.transaction() as session:
        for table_id in (lazy, refused, disabled):
            TableRepo(session).update(table_id, policies={"hoodie.compact.inline.max.delta.commits": 2})
        TableRepo(session).update(disabled, enabled=False)
    props = refused_path / ".hoodie" / "hoodie.properties"  # a payload TMS cannot merge: compaction refused
    props.write_text(props.read_text() + "hoodie.compaction.payload.class=com.acme.MyPayload\n")
    ctx = MonitorContext(Settings(monitor_unplanned_seconds=600), datetime.now(UTC), {})
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "not_scheduled")
    assert (alert.subject, alert.table_id, alert.state) == (f"table:{lazy}", lazy, "firing")
    assert "compaction due since" in alert.message and alert.details["delta_commits"] >= 2

    assert planner.tick() >= 1  # the planner is back: its periodic trigger plans the compaction
    [task] = _compactions(db, lazy)
    evaluate(lease, epoch, ctx)
    assert [(a.subject, a.state) for a in _alerts(db, "not_scheduled")] == [(f"table:{lazy}", "resolved")]
    assert task.state in (S.RUNNABLE, S.PENDING, S.BLOCKED)


def test_a_task_that_gave_way_to_a_writer_is_not_a_failure_to_alert_on(db):
    """A conflict (the writer won, the plan was rolled back) ends the task FAILED and not retried, as Hudi's
    MVCC promises; only the other failures that are not retried fire task_failed."""
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        ids = {}
        for n, kind in enumerate(("conflict", "missing_files")):
            task, _ = TaskRepo(session).create(table_id=table_id, service="clustering", state=S.FAILED,
                                               instant=f"2026010100000{n}000")
            session.execute(update(Task).where(Task.id == task.id).values(failure_kind=kind, retryable=False))
            ids[kind] = task.id
    evaluate(lease, epoch, MonitorContext(Settings(), datetime.now(UTC), {}))
    assert [a.task_id for a in _alerts(db, "task_failed")] == [ids["missing_files"]]


def test_a_table_whose_compactions_come_too_late_gets_freshness_at_risk_with_its_lead(db):
    """The rule on the database: the digest the planner stored (a delta commit a minute for 3 minutes, a count
    trigger of 40) and the table's past compactions (20 minutes each) put the compaction past the 30-minute
    objective: warned now, with the lead (time left before the objective is missed) in the alert."""
    from datetime import timedelta

    from tms.planning.digest import TimelineDigest
    from tms.table_service import TableService

    lease, epoch = _leader(db)
    with db.transaction() as session:
        now = session.execute(text("SELECT now()")).scalar_one()
    commits = [(now - timedelta(minutes=m)).astimezone(UTC) for m in (3, 2, 1)]
    digest = TimelineDigest(counted={TableService.COMPACTION: [c.strftime("%Y%m%d%H%M%S") + "000" for c in commits],
                                     TableService.CLEAN: []}, timeline_utc=True)  # what the default services count
    policies = {"tms.freshness.max.uncompacted.seconds": 1800, "hoodie.compact.inline.max.delta.commits": 40}
    with db.transaction() as session:
        table = TableRepo(session).register(base_path="/nowhere/fresh", name="fresh", database="d",
                                            table_type="MERGE_ON_READ", table_version=8, policies=policies,
                                            planner_state=digest.to_state())
        for n in range(3):  # past compactions of 20 minutes each
            task, _ = TaskRepo(session).create(table_id=table.id, service="compaction",
                                               instant=f"2026010100000{n}000", state=S.SUCCEEDED)
            started = now - timedelta(hours=n + 1)
            session.execute(update(Task).where(Task.id == task.id).values(
                started_at=started, finished_at=started + timedelta(minutes=20)))
    ctx = MonitorContext(Settings(), datetime.now(UTC), {})
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "freshness_at_risk")
    assert alert.table_id == table.id and alert.state == "firing"
    lead = alert.details["lead_seconds"]
    assert 26 * 60 < lead <= 27 * 60 + 5, lead  # the oldest delta commit is 3 minutes old: 27 minutes left
    assert alert.details["forecast_compacted_at"] > alert.details["deadline"]
    with db.transaction() as session:  # the objective relaxed: the forecast is within it, the alert resolves
        TableRepo(session).update(table.id, policies={**policies, "tms.freshness.max.uncompacted.seconds": 7200})
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "freshness_at_risk")
    assert alert.state == "resolved"


def test_a_restore_that_succeeded_is_told_once_as_restore_done(db):
    lease, epoch = _leader(db)
    table_id = _table(db)
    with db.transaction() as session:
        done, _ = TaskRepo(session).create(table_id=table_id, service="restore", state=S.SUCCEEDED,
                                           instant="20260101000009000", target_instant="20260101000001000")
        session.execute(update(Task).where(Task.id == done.id).values(finished_at=datetime.now(UTC)))
        TaskRepo(session).create(table_id=table_id, service="restore", state=S.RUNNABLE, instant="20260101000010000")
    evaluate(lease, epoch, MonitorContext(Settings(), datetime.now(UTC), {}))
    [alert] = _alerts(db, "restore_done")
    assert (alert.task_id, alert.severity, alert.state) == (done.id, "info", "firing")
    assert "savepoint 20260101000001000" in alert.message


def test_a_clean_due_and_never_attempted_fires_not_scheduled_and_the_table_is_not_ok(db, fixture_tables, tmp_path):
    """Issue 36: a due clean that the planner neither planned nor attempted is flagged (the alert, and health
    not ok); one the planner attempted and found nothing to clean is not (the trigger re-armed, and the table's
    `services` say why)."""
    from service.table_view import live_view
    from tms.db import TablePolicy
    from tms.planning.decisions import PlannerOptions

    lease, epoch = _leader(db)
    table_id, path = _trips_table(db, fixture_tables, tmp_path, "unclean",
                                  {"hoodie.compact.inline.max.delta.commits": 100})
    services = frozenset({"compaction", "clean", "rollback"})
    lax = Planner(db, PlannerOptions(services=services, clean_commits=100), watch_timelines=False)
    assert lax.reconcile(table_id)  # the planner's digest counts the fixture's writes: not due for it
    # The trigger is lowered (TMS_PLANNER_CLEAN_COMMITS=1) while no planner runs: due since the first write
    # after the fixture's clean, long ago; two writes since, twice the trigger.
    settings = Settings(monitor_unplanned_seconds=600, planner_clean_commits=1)
    ctx = MonitorContext(settings, datetime.now(UTC), {})
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "not_scheduled")
    assert (alert.subject, alert.table_id, alert.state) == (f"table:{table_id}:clean", table_id, "firing")
    assert "clean due since" in alert.message and alert.details["completed_writes"] == 2

    def health():
        with db.transaction() as session:
            row = TableRepo(session).get(table_id)
            state, policy = row.planner_state, TablePolicy.from_stored(row.policies)
        return live_view(str(path), policy, {}, True, clean_commits=1, planner_state=state)["health"]

    before = health()
    assert before.status == "warning" and any(r.startswith("clean due and not planned") for r in before.reasons)

    assert Planner(db, PlannerOptions(services=services, clean_commits=1), watch_timelines=False).reconcile(table_id)
    evaluate(lease, epoch, ctx)  # the planner attempted the clean (planned it, or found nothing to clean)
    assert [(a.subject, a.state) for a in _alerts(db, "not_scheduled")] == [(f"table:{table_id}:clean", "resolved")]
    assert not any(r.startswith("clean due and not planned") for r in health().reasons)


def _crashed(db, instance_id: str, roles: list[str], host: str, minutes_ago: int) -> None:
    """An instance whose process died `minutes_ago` without deregistering (kill -9)."""
    with db.transaction() as session:
        InstanceRepo(session).heartbeat(instance_id, roles=roles, host=host, pid=1, version="v")
        session.execute(update(Instance).where(Instance.id == instance_id).values(
            started_at=text(f"now() - interval '{minutes_ago + 10} minutes'"),
            heartbeat_at=text(f"now() - interval '{minutes_ago} minutes'")))


def _firing(db, kind: str) -> list[str]:
    return sorted(a.subject for a in _alerts(db, kind) if a.state == "firing")


def test_instance_down_resolves_when_a_restart_of_the_same_roles_takes_each_crashed_instances_place(db):
    lease, epoch = _leader(db)
    ctx = MonitorContext(Settings(monitor_instance_missing_seconds=60), datetime.now(UTC), {})
    _crashed(db, "h1:1:a", ["worker"], "h1", minutes_ago=9)
    _crashed(db, "h2:2:b", ["worker"], "h2", minutes_ago=8)
    _crashed(db, "h1:3:c", ["planner"], "h1", minutes_ago=7)
    evaluate(lease, epoch, ctx)
    assert _firing(db, "instance_down") == ["instance:h1:1:a", "instance:h1:3:c", "instance:h2:2:b"]
    with db.transaction() as session:  # one worker is back, under a new id on h2: one of the two is still missing
        InstanceRepo(session).heartbeat("h2:4:d", roles=["worker"], host="h2", pid=4, version="v")
    evaluate(lease, epoch, ctx)
    assert _firing(db, "instance_down") == ["instance:h1:3:c", "instance:h2:2:b"]  # the earliest dead replaced
    with db.transaction() as session:  # the second worker back (another host: a new container), not the planner
        InstanceRepo(session).heartbeat("h9:5:e", roles=["worker"], host="h9", pid=5, version="v")
    evaluate(lease, epoch, ctx)
    assert _firing(db, "instance_down") == ["instance:h1:3:c"]


def test_an_archival_due_and_never_attempted_fires_not_scheduled(db, tmp_path):
    """Issue 36: a table over hoodie.keep.max.commits by a whole archival's worth more (max - min), that the
    planner neither planned nor attempted to archive, is flagged; the planner's next pass plans it and it
    resolves."""
    from planning_support import ModelledTable, rec

    from service.table_view import registration_facts
    from tms.db.models import RegisteredTable
    from tms.planning.decisions import PlannerOptions

    lease, epoch = _leader(db)
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", version=8)
    for n in range(7):
        t.write([rec(0, 10 + n)])
    with db.transaction() as session:
        table_id = TableRepo(session).register(base_path=str(t.path), policies={"hoodie.cleaner.commits.retained": 1},
                                               **registration_facts(t.table())).id
    services = frozenset(Settings().planner_services)  # the monitor reads the digest of TMS_PLANNER_SERVICES
    planner = Planner(db, PlannerOptions(services=services, clean_commits=100), watch_timelines=False)
    assert planner.reconcile(table_id)  # 7 commits: within Hudi's default limit (30), nothing due
    ctx = MonitorContext(Settings(), datetime.now(UTC), {})
    evaluate(lease, epoch, ctx)
    assert _alerts(db, "not_scheduled") == []
    # The limit is lowered while no planner runs: due since the 5th commit, two more since (max - min)
    with db.transaction() as session:
        session.execute(update(RegisteredTable).where(RegisteredTable.id == table_id).values(policies={
            "hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4, "hoodie.cleaner.commits.retained": 1}))
    evaluate(lease, epoch, ctx)
    [alert] = _alerts(db, "not_scheduled")
    assert (alert.subject, alert.state) == (f"table:{table_id}:archive", "firing")
    assert alert.details["completed_commits"] == 7 and "archival due" in alert.message

    def health():
        from service.table_view import live_view
        from tms.db import TablePolicy
        with db.transaction() as session:
            row = TableRepo(session).get(table_id)
            state, policy = row.planner_state, TablePolicy.from_stored(row.policies)
        return live_view(str(t.path), policy, {}, True, planner_state=state)["health"]

    assert health().status == "warning" and any(r.startswith("archival due and not planned: 7 completed commits")
                                                for r in health().reasons)
    assert planner.reconcile(table_id)  # plans it
    with db.transaction() as session:
        assert [x.service for x in TaskRepo(session).find(table_id=table_id)[0]] == ["archive"]
    evaluate(lease, epoch, ctx)
    assert [(a.subject, a.state) for a in _alerts(db, "not_scheduled")] == [(f"table:{table_id}:archive", "resolved")]
    assert not any(r.startswith("archival due") for r in health().reasons)
