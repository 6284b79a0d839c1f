"""Monitoring: the alert rules the leader evaluates every `manager_monitor_seconds`. Each rule sees the
conditions that hold now, one per subject; `AlertRepo.sync` fires the new ones, counts the ones still
firing and resolves the ones that cleared (one alert per type and subject at a time).

The planner owns the alerts of what it sees while planning (`table_unreadable`, `planning_failed`,
`compensation_failed`), firing and resolving them itself."""
from __future__ import annotations

import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import AlertRepo, Instance, RegisteredTable, ResourceQueue, Sighting, Task, TaskState
from tms.hudi.conflicts import CONFLICT_REASON

from .leadership import LeaderLease

log = logging.getLogger(__name__)
S = TaskState
Rule = Callable[[Session, "MonitorContext"], dict[str, Sighting]]
HISTORY = 20  # succeeded tasks of a table and action an estimate is drawn from


@dataclass
class MonitorContext:
    settings: Settings
    now: datetime
    backlog: dict[str, list[int]]  # queue -> its backlog at the last evaluations (queue_saturated)
    # table -> (pending plans, uncompacted delta commits) at the last evaluations (backlog_growing)
    table_backlog: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


def task_failed(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """Retries exhausted, or a failure that is not retried: FAILED for good. A conflict is not one: the writer
    won as Hudi's MVCC promises, and the next plan takes its data."""
    rows = session.scalars(select(Task).where(Task.state == S.FAILED, Task.next_attempt_at.is_(None),
                                              Task.failure_kind.is_distinct_from(CONFLICT_REASON)))
    return {f"task:{t.id}": Sighting("critical", f"{t.action} {t.instant} failed for good after attempt "
                                                 f"{t.attempt}: {t.retry_reason or t.error or 'no reason recorded'}",
                                     table_id=t.table_id, task_id=t.id, queue=t.queue,
                                     details={"error": t.error, "failure_kind": t.failure_kind})
            for t in rows}


def task_timeout(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """The last attempt ran past its timeout (firing until the task succeeds or is given up)."""
    rows = session.scalars(select(Task).where(Task.failure_kind == "timeout",
                                              Task.state.in_([S.FAILED, S.RUNNABLE, S.RUNNING])))
    timeout = ctx.settings.worker_job_timeout_seconds
    return {f"task:{t.id}": Sighting("warning", f"{t.action} {t.instant} ran past its timeout of "
                                                f"{timeout:.0f} s (attempt {t.attempt})",
                                     table_id=t.table_id, task_id=t.id, queue=t.queue) for t in rows}


def not_scheduled(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """A runnable task no worker claimed for `monitor_unclaimed_seconds`."""
    limit = ctx.now - timedelta(seconds=ctx.settings.monitor_unclaimed_seconds)
    rows = session.scalars(select(Task).where(Task.state == S.RUNNABLE, Task.updated_at < limit,
                                              (Task.run_after.is_(None)) | (Task.run_after < limit)))
    return {f"task:{t.id}": Sighting("warning", f"{t.action} {t.instant} has been runnable since "
                                                f"{t.updated_at:%Y-%m-%d %H:%M:%S} and no worker claimed it",
                                     table_id=t.table_id, task_id=t.id, queue=t.queue) for t in rows}


def held_too_long(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """A compensation hold (a plan BLOCKED by writes pending before it) older than `monitor_hold_seconds`."""
    limit = ctx.now - timedelta(seconds=ctx.settings.monitor_hold_seconds)
    rows = session.scalars(select(Task).where(Task.state == S.BLOCKED, Task.created_at < limit))
    return {f"task:{t.id}": Sighting("warning", f"{t.action} {t.instant} has been held since "
                                                f"{t.created_at:%Y-%m-%d %H:%M:%S} by {', '.join(t.blockers)}",
                                     table_id=t.table_id, task_id=t.id, details={"blockers": list(t.blockers)})
            for t in rows}


def instance_down(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """A process whose heartbeat is missing (a clean stop deregisters; a crash leaves its row behind)."""
    limit = ctx.now - timedelta(seconds=ctx.settings.monitor_instance_missing_seconds)
    rows = session.scalars(select(Instance).where(Instance.heartbeat_at < limit))
    return {f"instance:{i.id}": Sighting("critical" if "manager" in i.roles else "warning",
                                         f"{','.join(i.roles)} {i.id} has not beaten since "
                                         f"{i.heartbeat_at:%Y-%m-%d %H:%M:%S}", details={"roles": list(i.roles)})
            for i in rows}


def queue_saturated(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """A queue running at capacity while its backlog (runnable tasks preferring it, or unassigned) grew
    over the last three evaluations."""
    running = dict(session.execute(select(Task.queue, func.count()).where(Task.state == S.RUNNING)
                                   .group_by(Task.queue)).all())
    waiting = session.scalar(select(func.count()).select_from(Task).where(Task.state == S.RUNNABLE)) or 0
    sightings = {}
    for queue in session.scalars(select(ResourceQueue).where(ResourceQueue.enabled.is_(True))):
        history = ctx.backlog.setdefault(queue.name, [])
        history.append(waiting if running.get(queue.name, 0) >= queue.capacity else -1)
        del history[:-3]
        if len(history) == 3 and history[0] >= 0 and history[0] < history[1] <= history[2]:
            sightings[f"queue:{queue.name}"] = Sighting(
                "warning", f"queue {queue.name} runs {running.get(queue.name, 0)} of {queue.capacity} jobs and "
                           f"{waiting} task(s) wait, more than before", queue=queue.name)
    return sightings


BACKLOG_EVALUATIONS = 4  # backlog_growing: rising at each of the last three evaluations
PENDING = (S.PENDING, S.BLOCKED, S.RUNNABLE, S.RUNNING)


def backlog_growing(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """A table whose pending plans, or whose delta commits awaiting a compaction (its pending log files),
    rose at each of the last three evaluations: work arrives faster than it is served."""
    pending = dict(session.execute(select(Task.table_id, func.count()).where(Task.state.in_(PENDING))
                                   .group_by(Task.table_id)).all())
    sightings = {}
    for table_id, name, state in session.execute(select(RegisteredTable.id, RegisteredTable.name,
                                                        RegisteredTable.planner_state)
                                                 .where(RegisteredTable.enabled.is_(True))):
        logs = len(((state or {}).get("counted") or {}).get("compaction") or [])
        history = ctx.table_backlog.setdefault(table_id, [])
        history.append((pending.get(table_id, 0), logs))
        del history[:-BACKLOG_EVALUATIONS]
        if len(history) < BACKLOG_EVALUATIONS:
            continue
        plans_rise = all(a[0] < b[0] for a, b in zip(history, history[1:], strict=False))
        logs_rise = all(a[1] < b[1] for a, b in zip(history, history[1:], strict=False))
        if plans_rise or logs_rise:
            what = "pending plans" if plans_rise else "delta commits awaiting a compaction"
            sightings[f"table:{table_id}"] = Sighting(
                "warning", f"table {name}: {what} rose at each of the last {BACKLOG_EVALUATIONS - 1} evaluations "
                           f"(now {history[-1][0 if plans_rise else 1]})", table_id=table_id,
                details={"pending_plans": history[-1][0], "uncompacted_delta_commits": history[-1][1]})
    return sightings


def predicted_timeout(session: Session, ctx: MonitorContext) -> dict[str, Sighting]:
    """Early warning: a running task whose predicted end (its table's past seconds per byte for the action,
    times this plan's bytes) passes its timeout."""
    timeout = ctx.settings.worker_job_timeout_seconds
    sightings = {}
    for t in session.scalars(select(Task).where(Task.state == S.RUNNING, Task.started_at.is_not(None))):
        predicted = predict_seconds(session, t)
        if predicted is not None and predicted > timeout:
            sightings[f"task:{t.id}"] = Sighting(
                "warning", f"{t.action} {t.instant} is predicted to take {predicted:.0f} s, past its timeout of "
                           f"{timeout:.0f} s", table_id=t.table_id, task_id=t.id, queue=t.queue,
                details={"predicted_seconds": round(predicted, 1)})
    return sightings


def predict_seconds(session: Session, task: Task) -> float | None:
    """The median seconds per byte of the table's last succeeded tasks of the same action, times the task's
    plan bytes; None without history."""
    size = _plan_bytes(task.plan_stats)
    if not size:
        return None
    history = session.execute(
        select(Task.plan_stats, Task.started_at, Task.finished_at)
        .where(Task.table_id == task.table_id, Task.action == task.action, Task.state == S.SUCCEEDED,
               Task.started_at.is_not(None), Task.finished_at.is_not(None))
        .order_by(Task.id.desc()).limit(HISTORY)).all()
    rates = [(finished - started).total_seconds() / b for stats, started, finished in history
             if (b := _plan_bytes(stats))]
    return statistics.median(rates) * size if rates else None


def _plan_bytes(stats: dict | None) -> int:
    stats = stats or {}
    return int(stats.get("total_bytes") or sum(stats.get("operation_bytes") or ()))


RULES: dict[str, Rule] = {
    "task_failed": task_failed, "task_timeout": task_timeout, "not_scheduled": not_scheduled,
    "held_too_long": held_too_long, "instance_down": instance_down, "queue_saturated": queue_saturated,
    "predicted_timeout": predicted_timeout, "backlog_growing": backlog_growing,
}


def evaluate(lease: LeaderLease, epoch: int, ctx: MonitorContext) -> dict[str, tuple[int, int]]:
    """Evaluate every rule in one fenced transaction: kind -> (fired, resolved)."""
    changes: dict[str, tuple[int, int]] = {}
    with lease.fenced(epoch) as session:
        ctx.now = session.execute(select(func.now())).scalar_one()
        alerts = AlertRepo(session)
        for kind, rule in RULES.items():
            fired, resolved = alerts.sync(kind, rule(session, ctx))
            if fired or resolved:
                changes[kind] = (len(fired), len(resolved))
    for kind, (n_fired, n_resolved) in changes.items():
        log.info("alerts %s: %s fired, %s resolved [epoch %s]", kind, n_fired, n_resolved, epoch)
    return changes
