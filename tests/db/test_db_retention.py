"""The retention of TMS's own history (RetentionRepo): rows older than the retention go, newer ones stay, and
what is live or referenced stays whatever its age; each call removes one bounded batch."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, text, update

from tms.db import AlertRepo, EventRepo, HealthRepo, NewEvent, RetentionRepo, TaskRepo, TaskState
from tms.db.models import (
    Alert,
    Event,
    HealthSample,
    RegisteredTable,
    ShadowRun,
    Task,
    TaskAttempt,
    Webhook,
    WebhookDelivery,
)

S = TaskState
MONTH = timedelta(days=30)
OLD = text("now() - interval '40 days'")


def _drain(db, purge, limit: int = 2) -> list[dict[str, int]]:
    """Call `purge(repo, limit, cursor)` one transaction at a time, as the leader does, until a batch picks fewer
    than `limit`; the rows each batch removed (batches that removed none left out)."""
    batches, cursor = [], None
    while True:
        with db.transaction() as session:
            purged = purge(RetentionRepo(session), limit, cursor)
        batches.append(purged.removed)
        if purged.picked < limit:
            return [b for b in batches if b]
        cursor = purged.cursor


def _age(db, model, ids, **columns) -> None:
    """Make the rows' given time columns 40 days old."""
    with db.transaction() as session:
        session.execute(update(model).where(model.id.in_(ids)).values({c: OLD for c in columns}))


def _ids(db, model) -> set[int]:
    with db.transaction() as session:
        return set(session.scalars(select(model.id)))


def _event(table_id: int, instant: str) -> NewEvent:
    return NewEvent(table_id=table_id, instant=instant, action="deltacommit", state="completed",
                    completion_time=None, source="api", write_stats=None, extra_metadata=None)


def test_old_processed_events_go_in_bounded_batches_and_unprocessed_or_recent_ones_stay(db, table_id):
    with db.transaction() as session:
        EventRepo(session).add_many([_event(table_id, f"2026010100000{i:04d}") for i in range(6)])
    with db.transaction() as session:
        events = list(session.scalars(select(Event).order_by(Event.id)))
        EventRepo(session).mark_processed(e.id for e in events[:5])
    old = [e.id for e in events[:4]]
    unprocessed_old, recent = events[5].id, events[4].id
    _age(db, Event, [*old, unprocessed_old], received_at=True)

    batches = _drain(db, lambda repo, n, _: repo.purge_events(MONTH, n))

    assert batches == [{"events": 2}, {"events": 2}]  # never more than a batch at a time
    assert _ids(db, Event) == {unprocessed_old, recent}


def test_old_health_samples_go_but_each_tables_newest(db, table_id):
    with db.transaction() as session:
        row = RegisteredTable(base_path="/data/t2", name="t2", database="default", table_type="COPY_ON_WRITE",
                              table_version=6)
        session.add(row)
        session.flush()
        other = row.id
        health = HealthRepo(session)
        for t in (table_id, table_id, other):
            health.record_sample(t, sampled_at=func.now(), score=90, status="ok", log_bytes=0, log_files=0,
                                 oldest_uncompacted_seconds=None)
        health.record(other, score=90, status="ok", reasons=[])
        session.flush()
        first, second, lone = sorted(session.scalars(select(HealthSample.id)))
    _age(db, HealthSample, [first, lone], sampled_at=True)

    assert _drain(db, lambda repo, n, _: repo.purge_health_samples(MONTH, n)) == [{"health_samples": 1}]
    assert _ids(db, HealthSample) == {second, lone}, "the old one of a table with a newer goes; a lone one stays"
    with db.transaction() as session:
        assert HealthRepo(session).of(other) is not None, "a table's last score is never purged"


def test_resolved_alerts_and_done_deliveries_go_firing_alerts_and_pending_deliveries_stay(db, table_id):
    with db.transaction() as session:
        session.add(Webhook(url="http://127.0.0.1:9/hook", min_severity="info"))
        session.flush()
        alerts = AlertRepo(session)
        for name in ("resolved", "firing", "awaiting", "recent"):
            alerts.raise_alert(kind="task_failed", severity="critical", message=name, fingerprint=name,
                               table_id=table_id)
        for name in ("resolved", "awaiting", "recent"):
            alerts.resolve(name)
        by_name = {a.message: a.id for a in session.scalars(select(Alert))}
    with db.transaction() as session:
        deliveries = {d.id: (d.alert_id, d.event) for d in session.scalars(select(WebhookDelivery))}
        # every delivery done, but the resolution of "awaiting" (still to send)
        session.execute(update(WebhookDelivery).where(~(
            (WebhookDelivery.alert_id == by_name["awaiting"]) & (WebhookDelivery.event == "resolved")))
            .values(state="delivered"))
    old = [by_name[n] for n in ("resolved", "firing", "awaiting")]
    _age(db, Alert, [by_name["resolved"], by_name["awaiting"]], created_at=True, resolved_at=True)
    _age(db, Alert, [by_name["firing"]], created_at=True)
    _age(db, WebhookDelivery, [d for d, (alert, _) in deliveries.items() if alert in old], created_at=True)

    removed = _drain(db, lambda repo, n, _: repo.purge_webhook_deliveries(MONTH, n))
    removed += _drain(db, lambda repo, n, _: repo.purge_alerts(MONTH, n))

    assert _ids(db, Alert) == {by_name["firing"], by_name["awaiting"], by_name["recent"]}
    kept = {deliveries[d] for d in _ids(db, WebhookDelivery)}
    assert kept == {(by_name["awaiting"], "resolved"), (by_name["recent"], "firing"),
                    (by_name["recent"], "resolved")}
    assert sum(b.get("webhook_deliveries", 0) for b in removed) == 4 and all(sum(b.values()) <= 2 for b in removed)
    assert sum(b.get("alerts", 0) for b in removed) == 1


def _task(session, table_id: int, instant: str, state: S, service: str = "compaction", **changes) -> int:
    task, _ = TaskRepo(session).create(table_id=table_id, service=service, instant=instant, state=state)
    if changes:
        session.execute(update(Task).where(Task.id == task.id).values(**changes))
    return task.id


def _attempts(session, task_id: int, n: int) -> None:
    for attempt in range(1, n + 1):
        session.add(TaskAttempt(task_id=task_id, attempt=attempt, fencing_token=attempt, worker="w",
                                outcome="FAILED", finished_at=func.now()))


def test_ended_tasks_go_with_their_attempts_and_live_or_referenced_ones_stay(db, table_id):
    with db.transaction() as session:
        ids = {
            # succeeded long ago, with newer succeeded ones of the service: removed (with keep_succeeded=3)
            "succeeded": _task(session, table_id, "20260101000000001", S.SUCCEEDED),
            "kept_history": _task(session, table_id, "20260101000000002", S.SUCCEEDED),
            "newest_succeeded": _task(session, table_id, "20260101000000003", S.SUCCEEDED),
            # a plan on the timeline TMS gave up or was told to abandon: its row keeps it from being adopted again
            "failed_plan": _task(session, table_id, "20260101000000004", S.FAILED),
            "cancelled_plan": _task(session, table_id, "20260101000000005", S.CANCELLED, service="clean"),
            # live whatever their age
            "runnable": _task(session, table_id, "20260101000000006", S.RUNNABLE, service="clustering"),
            "retrying": _task(session, table_id, "20260101000000007", S.FAILED, service="ttl",
                              next_attempt_at=text("now() + interval '1 hour'")),
            # as the cancelled backup below, but an alert refers to it
            "alerted": _task(session, table_id, "20260101000000008", S.CANCELLED, service="backup"),
            # a cancelled backup (it names a request, not a plan) followed by a newer one: removed
            "cancelled_backup": _task(session, table_id, "20260101000000009", S.CANCELLED, service="backup"),
            "newest_backup": _task(session, table_id, "20260101000000010", S.SUCCEEDED, service="backup"),
            "recent": _task(session, table_id, "20260101000000012", S.SUCCEEDED),
        }
        for name in ("succeeded", "failed_plan", "runnable"):
            _attempts(session, ids[name], 3)
        session.add(ShadowRun(task_id=ids["succeeded"], attempt=1, rollout="r", canary_engine="c",
                              stable_engine="s", outcome="agreed"))
        AlertRepo(session).raise_alert(kind="task_failed", severity="critical", message="m", fingerprint="f",
                                       task_id=ids["alerted"])
    _age(db, Task, [i for name, i in ids.items() if name != "recent"], created_at=True, updated_at=True)
    with db.transaction() as session:
        session.execute(update(TaskAttempt).values(started_at=OLD, finished_at=OLD))

    removed = _drain(db, lambda repo, n, after: repo.purge_attempts(MONTH, n, after))
    removed += _drain(db, lambda repo, n, after: repo.purge_tasks(MONTH, n, after, keep_succeeded=3))

    gone = {"succeeded", "cancelled_backup"}
    assert _ids(db, Task) == {i for name, i in ids.items() if name not in gone}
    with db.transaction() as session:
        attempts = {(a.task_id, a.attempt) for a in session.scalars(select(TaskAttempt))}
        assert session.scalar(select(func.count()).select_from(ShadowRun)) == 0
    # a live task keeps all its attempts; an ended one kept keeps its latest
    assert attempts == {(ids["failed_plan"], 3), *((ids["runnable"], a) for a in (1, 2, 3))}
    assert sum(b.get("task_attempts", 0) for b in removed) == 5  # 2 of the failed plan, 3 of the succeeded task
    assert sum(b.get("tasks", 0) for b in removed) == 2 and sum(b.get("shadow_runs", 0) for b in removed) == 1


def test_old_shadow_runs_go_but_each_rollouts_newest(db, table_id):
    with db.transaction() as session:
        task = _task(session, table_id, "20260101000000001", S.SUCCEEDED)
        runs = [ShadowRun(task_id=task, attempt=1, rollout=rollout, canary_engine="c", stable_engine="s",
                          outcome="agreed") for rollout in ("a", "a", "b")]
        session.add_all(runs)
        session.flush()
        old_a, new_a, lone_b = (r.id for r in runs)
    _age(db, ShadowRun, [old_a, lone_b], created_at=True)

    assert _drain(db, lambda repo, n, _: repo.purge_shadow_runs(MONTH, n)) == [{"shadow_runs": 1}]
    assert _ids(db, ShadowRun) == {new_a, lone_b}
