"""TMS's own history, bounded: one small batch at a time, the rows of each kind older than a retention that
nothing live refers to are deleted (the manager's leader, manager/retention.py, calls these in a loop).

Each method picks at most `limit` rows (SKIP LOCKED: a row another transaction holds waits for the next run),
deletes their children first (so the counts are exact and no ON DELETE CASCADE removes a row the retention
keeps), and returns the rows removed per kind (the table's name). Ages are on the database's clock.

Kept whatever their age:
- a task that is live (not SUCCEEDED, CANCELLED or FAILED for good), or whose row keeps TMS from adopting its
  plan again (a FAILED or CANCELLED task of a service on the timeline: its plan may still be requested there);
  the newest task of each table and service, and its newest `keep_succeeded` that succeeded (the schedules'
  and the forecasts' history); a task an alert still refers to;
- the attempts of a live task, and the latest attempt of every task;
- an event the planner has not processed yet;
- a firing alert, and one with a delivery still pending;
- a pending webhook delivery;
- the newest health sample of each table (`table_health`, each table's last score, is never purged);
- the newest shadow run of each rollout."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Delete, Select, and_, delete, exists, func, or_, select, tuple_
from sqlalchemy.orm import Session, aliased

from tms.table_service import REQUESTED_SERVICES

from ..models import Alert, Event, HealthSample, ShadowRun, Task, TaskAttempt, WebhookDelivery
from ..states import TaskState

S = TaskState
EVENTS, HEALTH_SAMPLES, WEBHOOK_DELIVERIES, ALERTS = "events", "health_samples", "webhook_deliveries", "alerts"
SHADOW_RUNS, TASK_ATTEMPTS, TASKS = "shadow_runs", "task_attempts", "tasks"
# Every kind of row the retention removes.
KINDS = (EVENTS, HEALTH_SAMPLES, WEBHOOK_DELIVERIES, ALERTS, SHADOW_RUNS, TASK_ATTEMPTS, TASKS)
_REQUEST_NAMED = [s.value for s in REQUESTED_SERVICES]


Cursor = tuple[datetime, int]  # (created_at, id) of the last task a batch looked at


@dataclass(frozen=True)
class Purged:
    """One batch: how many rows of its own kind it picked (fewer than its limit: the last batch), the rows removed
    per kind, and where the next batch goes on from (the kinds whose kept rows are many: tasks, attempts)."""
    picked: int
    removed: dict[str, int] = field(default_factory=dict)
    cursor: Cursor | None = None


def ended_task() -> ColumnElement[bool]:
    """A task no one will work on again: succeeded, cancelled, or failed with no retry coming (an operator may
    still rerun a cancelled or failed one)."""
    return or_(Task.state.in_([S.SUCCEEDED.value, S.CANCELLED.value]),
               and_(Task.state == S.FAILED.value, Task.next_attempt_at.is_(None)))


class RetentionRepo:
    def __init__(self, session: Session):
        self.session = session

    def _cutoff(self, older_than: timedelta) -> ColumnElement[Any]:
        return func.now() - older_than

    def _pick(self, query: Select[Any], limit: int, of: Any) -> list[int]:
        return list(self.session.scalars(query.limit(limit).with_for_update(of=of, skip_locked=True)))

    def _delete(self, statement: Delete) -> int:
        result = self.session.execute(statement, execution_options={"synchronize_session": False})
        return cast(CursorResult[Any], result).rowcount

    def _purged(self, picked: int, cursor: Cursor | None = None, **counts: int) -> Purged:
        return Purged(picked, {kind: n for kind, n in counts.items() if n}, cursor)

    def purge_events(self, older_than: timedelta, limit: int) -> Purged:
        """Events processed by the planner and received more than `older_than` ago."""
        ids = self._pick(select(Event.id).where(Event.received_at < self._cutoff(older_than),
                                                Event.processed_at.is_not(None)), limit, Event)
        return self._purged(len(ids), events=self._delete(delete(Event).where(Event.id.in_(ids))) if ids else 0)

    def purge_health_samples(self, older_than: timedelta, limit: int) -> Purged:
        """Health samples taken more than `older_than` ago, but each table's newest."""
        newer = aliased(HealthSample)
        ids = self._pick(select(HealthSample.id).where(
            HealthSample.sampled_at < self._cutoff(older_than),
            exists().where(newer.table_id == HealthSample.table_id, newer.sampled_at > HealthSample.sampled_at)),
            limit, HealthSample)
        return self._purged(len(ids), health_samples=self._delete(delete(HealthSample).where(
            HealthSample.id.in_(ids))) if ids else 0)

    def purge_webhook_deliveries(self, older_than: timedelta, limit: int) -> Purged:
        """Deliveries written more than `older_than` ago that are done (delivered or expired)."""
        ids = self._pick(select(WebhookDelivery.id).where(WebhookDelivery.created_at < self._cutoff(older_than),
                                                          WebhookDelivery.state != "pending"), limit, WebhookDelivery)
        return self._purged(len(ids), webhook_deliveries=self._delete(delete(WebhookDelivery).where(
            WebhookDelivery.id.in_(ids))) if ids else 0)

    def purge_alerts(self, older_than: timedelta, limit: int) -> Purged:
        """Alerts resolved more than `older_than` ago with no delivery pending, and their deliveries."""
        cutoff = self._cutoff(older_than)
        pending = exists().where(WebhookDelivery.alert_id == Alert.id, WebhookDelivery.state == "pending")
        ids = self._pick(select(Alert.id).where(Alert.created_at < cutoff, Alert.resolved_at < cutoff, ~pending),
                         limit, Alert)
        if not ids:
            return Purged(0)
        deliveries = self._delete(delete(WebhookDelivery).where(WebhookDelivery.alert_id.in_(ids)))
        return self._purged(len(ids), webhook_deliveries=deliveries,
                            alerts=self._delete(delete(Alert).where(Alert.id.in_(ids))))

    def purge_shadow_runs(self, older_than: timedelta, limit: int) -> Purged:
        """Shadow runs made more than `older_than` ago, but each rollout's newest."""
        newer = aliased(ShadowRun)
        ids = self._pick(select(ShadowRun.id).where(
            ShadowRun.created_at < self._cutoff(older_than),
            exists().where(newer.rollout == ShadowRun.rollout, newer.created_at > ShadowRun.created_at)),
            limit, ShadowRun)
        return self._purged(len(ids), shadow_runs=self._delete(delete(ShadowRun).where(ShadowRun.id.in_(ids)))
                            if ids else 0)

    def purge_attempts(self, older_than: timedelta, limit: int, after: Cursor | None = None) -> Purged:
        """The attempts that ended more than `older_than` ago of the next `limit` ended tasks older than that (by
        creation, after `after`), but each task's latest. The tasks the retention removes take their attempts
        with them; this is for the ones it keeps."""
        cutoff = self._cutoff(older_than)
        tasks = self.session.execute(_after(select(Task.created_at, Task.id).where(
            Task.created_at < cutoff, ended_task()), after).order_by(Task.created_at, Task.id).limit(limit)).all()
        if not tasks:
            return Purged(0)
        later = aliased(TaskAttempt)
        attempts = self._delete(delete(TaskAttempt).where(
            TaskAttempt.task_id.in_([t.id for t in tasks]), TaskAttempt.finished_at < cutoff,
            exists().where(later.task_id == TaskAttempt.task_id, later.attempt > TaskAttempt.attempt)))
        return self._purged(len(tasks), (tasks[-1].created_at, tasks[-1].id), task_attempts=attempts)

    def purge_tasks(self, older_than: timedelta, limit: int, after: Cursor | None = None, *,
                    keep_succeeded: int) -> Purged:
        """The next `limit` ended tasks (by creation, after `after`) last changed more than `older_than` ago that
        nothing keeps (see the module), with their attempts and shadow runs."""
        cutoff = self._cutoff(older_than)
        newer = aliased(Task)
        same_service = (newer.table_id == Task.table_id, newer.service == Task.service, newer.id > Task.id)
        succeeded = Task.state == S.SUCCEEDED.value
        rows = self.session.execute(_after(select(Task.created_at, Task.id).where(
            Task.created_at < cutoff, Task.updated_at < cutoff, ended_task(),
            # a failed or cancelled plan on the timeline keeps its task: without it, TMS would adopt it again
            or_(succeeded, Task.service.in_(_REQUEST_NAMED)),
            exists().where(*same_service),  # not the newest of its table and service
            # nor one of its newest `keep_succeeded` that succeeded: at least that many succeeded after it
            or_(~succeeded, select(newer.id).where(*same_service, newer.state == S.SUCCEEDED.value)
                .offset(max(keep_succeeded, 1) - 1).limit(1).exists()),
            ~exists().where(Alert.task_id == Task.id)), after)
            .order_by(Task.created_at, Task.id).limit(limit).with_for_update(of=Task, skip_locked=True)).all()
        if not rows:
            return Purged(0)
        ids = [r.id for r in rows]
        return self._purged(
            len(ids), (rows[-1].created_at, rows[-1].id),
            task_attempts=self._delete(delete(TaskAttempt).where(TaskAttempt.task_id.in_(ids))),
            shadow_runs=self._delete(delete(ShadowRun).where(ShadowRun.task_id.in_(ids))),
            tasks=self._delete(delete(Task).where(Task.id.in_(ids))))


def _after(query: Select[datetime, int], after: Cursor | None) -> Select[datetime, int]:
    """The tasks after `after` in (created_at, id) order (the created_at index walks them)."""
    if after is None:
        return query
    return query.where(Task.created_at >= after[0], tuple_(Task.created_at, Task.id) > tuple_(*after))
