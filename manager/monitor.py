"""Monitoring: the alert rules the leader evaluates every `manager_monitor_seconds`. Each rule sees the
conditions that hold now, one per subject; `AlertRepo.sync` fires the new ones, counts the ones still
firing and resolves the ones that cleared (one alert per type and subject at a time).

The planner owns the alerts of what it sees while planning (`table_unreadable`, `planning_failed`,
`compensation_failed`), firing and resolving them itself."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tms.backup.schedule import missed_since
from tms.config import Settings
from tms.db import AlertRepo, InstanceRecord, Sighting, TableRecord, TaskState
from tms.db.read_models import MonitorReads
from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.conflicts import CONFLICT_REASON
from tms.hudi.timeline.instant import instant_to_datetime
from tms.instance import worker_timeouts
from tms.leadership import LeaderLease
from tms.plan_pass.on_request import planner_options
from tms.plan_pass.stored_digest import stored_digest
from tms.planning.capabilities import capabilities
from tms.planning.digest import TimelineDigest
from tms.planning.freshness import forecast_freshness
from tms.table_context import table_context
from tms.table_service import TableService
from tms.task_payload import BackupRequest, statistics_of

from .early_warning import HISTORY, Run, forecast

log = logging.getLogger(__name__)
S = TaskState
Rule = Callable[[MonitorReads, "MonitorContext"], dict[str, Sighting]]


@dataclass
class MonitorContext:
    settings: Settings
    now: datetime
    backlog: dict[str, list[int]]  # queue -> its backlog at the last evaluations (queue_saturated)
    # table -> (pending plans, uncompacted delta commits) at the last evaluations (backlog_growing)
    table_backlog: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    # (table, service) -> ((base path, newest counted instant, scan period, engine), whether TMS can run the
    # service on it) (not_scheduled)
    runnable: dict[tuple[int, str], tuple[tuple[str, str, int, str], bool]] = field(default_factory=dict)


def task_failed(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """Retries exhausted, or a failure that is not retried: FAILED for good. A conflict is not one: the writer
    won as Hudi's MVCC promises, and the next plan takes its data."""
    rows = reads.failed_for_good(except_kind=CONFLICT_REASON)
    return {f"task:{t.id}": Sighting("critical", f"{t.service} {t.instant} failed for good after attempt "
                                                 f"{t.attempt}: {t.retry_reason or t.error or 'no reason recorded'}",
                                     table_id=t.table_id, task_id=t.id, queue=t.queue,
                                     details={"error": t.error, "failure_kind": t.failure_kind})
            for t in rows}


RESTORE_DONE_FOR = timedelta(days=1)


def task_timeout(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """The last attempt ran past its timeout (firing until the task succeeds or is given up)."""
    # The worker that killed the job said why, with its own timeout, in the task's error.
    return {f"task:{t.id}": Sighting("warning", f"{t.service} {t.instant} timed out (attempt "
                                                f"{t.attempt}): {t.error or 'no reason recorded'}",
                                     table_id=t.table_id, task_id=t.id, queue=t.queue) for t in reads.timed_out()}


def not_scheduled(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A runnable task no worker claimed for `monitor_unclaimed_seconds`, or a table whose compaction or clean
    has been due for `monitor_unplanned_seconds` with nothing planned for it."""
    return {**_unclaimed(reads, ctx), **_unplanned(reads, ctx), **_unplanned_cleans(reads, ctx),
            **_unplanned_archives(reads, ctx)}


def _unclaimed(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    rows = reads.unclaimed_since(ctx.now - timedelta(seconds=ctx.settings.manager.monitor_unclaimed_seconds))
    return {f"task:{t.id}": Sighting("warning", f"{t.service} {t.instant} has been runnable since "
                                                f"{t.updated_at:%Y-%m-%d %H:%M:%S} and no worker claimed it",
                                     table_id=t.table_id, task_id=t.id, queue=t.queue) for t in rows}


def _unplanned(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """Enabled MERGE_ON_READ tables whose compaction trigger (Hudi's rule, on the planner's digest of the
    timeline) has held for `monitor_unplanned_seconds` while no compaction of theirs is planned, pending,
    running or awaiting a retry, and that TMS can compact (a refusal by the table's capabilities is the
    planner's `planning_failed`, not this)."""
    if TableService.COMPACTION not in ctx.settings.planner.services:
        return {}
    limit = ctx.now - timedelta(seconds=ctx.settings.manager.monitor_unplanned_seconds)
    planned = reads.tables_with_open(TableService.COMPACTION)
    options = planner_options(ctx.settings)
    sightings = {}
    for row in reads.enabled_tables("MERGE_ON_READ"):
        digest = stored_digest(row, options)
        if row.id in planned or digest is None:  # never planned yet: the planner's first scan decides
            continue
        policy = row.policy
        since = digest.compaction_due_since(policy)
        if since is None or since > limit or not _can_run(row, digest, TableService.COMPACTION, ctx,
                                                          reads.hudi_engine_for(row)):
            continue
        deltas = digest.counted[TableService.COMPACTION]
        sightings[f"table:{row.id}"] = Sighting(
            "warning", f"table {row.name}: compaction due since {since:%Y-%m-%d %H:%M:%S} "
                       f"({len(deltas)} delta commits, trigger {policy.trigger_strategy}) and none planned",
            table_id=row.id, details={"due_since": since.isoformat(), "delta_commits": len(deltas),
                                      "trigger_strategy": str(policy.trigger_strategy)})
    return sightings


def _unplanned_cleans(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """Enabled tables whose clean trigger (`planner_clean_commits` completed writes since the last clean or the
    planner's last attempt that found nothing to clean, on its digest) has held for `monitor_unplanned_seconds`
    while no clean of theirs is planned, pending, running or awaiting a retry, and that TMS can clean. An
    attempt that finds nothing to clean re-arms the trigger (the table's `services` say why), so this fires only
    when the planner did not attempt the clean at all."""
    if TableService.CLEAN not in ctx.settings.planner.services:
        return {}
    limit = ctx.now - timedelta(seconds=ctx.settings.manager.monitor_unplanned_seconds)
    trigger = ctx.settings.planner.clean_commits
    planned = reads.tables_with_open(TableService.CLEAN)
    services = frozenset(ctx.settings.planner.services)
    local_zone = table_context(ctx.settings).local_zone
    sightings = {}
    for row in reads.enabled_tables():
        digest = TimelineDigest.from_state(row.planner_state, services, local_zone)
        if row.id in planned or digest is None:
            continue
        writes = digest.counted.get(TableService.CLEAN) or []
        if len(writes) < trigger:
            continue
        since = instant_to_datetime(writes[trigger - 1], digest.zone)
        if since > limit or not _can_run(row, digest, TableService.CLEAN, ctx, reads.hudi_engine_for(row)):
            continue
        sightings[f"table:{row.id}:clean"] = Sighting(
            "warning", f"table {row.name}: clean due since {since:%Y-%m-%d %H:%M:%S} ({len(writes)} completed "
                       f"writes since the last clean or clean attempt, trigger {trigger}) and none planned",
            table_id=row.id, details={"service": TableService.CLEAN.value, "due_since": since.isoformat(),
                                      "completed_writes": len(writes), "trigger": trigger})
    return sightings


def _unplanned_archives(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """Enabled tables whose archival (Hudi's limit, hoodie.keep.max.commits, on the planner's digest) has been due
    for a whole archival's worth of completed commits more (TimelineDigest.archive_overdue) while no archive task
    of theirs is planned, running or awaiting a retry. An attempt that archived nothing (Hudi's rules held the
    oldest instants back) re-arms the trigger, so this fires only when the planner did not attempt it; a table
    whose policy turns archival off (hoodie.archive.automatic=false) is left alone."""
    if TableService.ARCHIVE not in ctx.settings.planner.services:
        return {}
    planned = reads.tables_with_open(TableService.ARCHIVE)
    options = planner_options(ctx.settings)
    sightings = {}
    for row in reads.enabled_tables():
        digest = stored_digest(row, options)
        if row.id in planned or digest is None:
            continue
        policy = row.policy
        if TableService.ARCHIVE not in options.services_for(policy) or not digest.archive_overdue(policy):
            continue
        if not _can_run(row, digest, TableService.ARCHIVE, ctx, reads.hudi_engine_for(row)):
            continue
        sightings[f"table:{row.id}:archive"] = Sighting(
            "warning", f"table {row.name}: archival due ({digest.commits} completed commits on the active timeline, "
                       f"hoodie.keep.max.commits {policy.archive_max_commits}) and none planned",
            table_id=row.id, details={"service": TableService.ARCHIVE.value, "completed_commits": digest.commits,
                                      "max_commits": policy.archive_max_commits})
    return sightings


def _can_run(row: TableRecord, digest: TimelineDigest, service: TableService, ctx: MonitorContext,
             hudi_engine: str | None) -> bool:
    """Whether TMS (or the Hudi engine running the table's tasks) can run `service` on the table (its
    capabilities), read from storage once per state of what its trigger counts, scan period and engine. A table
    that cannot be read is `table_unreadable`'s business, not this rule's."""
    key = (row.base_path, (digest.counted.get(service) or [""])[-1],
           int(ctx.now.timestamp() // ctx.settings.planner.scan_seconds), hudi_engine or "")
    known = ctx.runnable.get((row.id, service))
    if known is None or known[0] != key:
        try:
            can_run = capabilities(HudiTable.load(row.base_path, context=table_context(ctx.settings)),
                                   hudi_engine)[service].can_run
        except (HudiError, OSError) as exc:
            log.info("table %s: cannot read its capabilities: %s", row.id, exc)
            return False
        known = ctx.runnable[(row.id, service)] = (key, can_run)
    return known[1]


def held_too_long(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A compensation hold (a plan BLOCKED by writes pending before it) older than `monitor_hold_seconds`."""
    rows = reads.held_since(ctx.now - timedelta(seconds=ctx.settings.manager.monitor_hold_seconds))
    return {f"task:{t.id}": Sighting("warning", f"{t.service} {t.instant} has been held since "
                                                f"{t.created_at:%Y-%m-%d %H:%M:%S} by {', '.join(t.blockers)}",
                                     table_id=t.table_id, task_id=t.id, details={"blockers": list(t.blockers)})
            for t in rows}


def instance_down(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A process whose heartbeat is missing (a clean stop deregisters; a crash leaves its row behind) and that
    no process took the place of (`replaced`). An operator's acknowledgement forgets its row (the alert then
    resolves: service/routers/manager.py)."""
    silent = reads.silent_instances(ctx.now - timedelta(seconds=ctx.settings.manager.monitor_instance_missing_seconds))
    gone = replaced(silent, reads.instances()) if silent else set()
    return {f"instance:{i.id}": Sighting("critical" if "manager" in i.roles else "warning",
                                         f"{','.join(i.roles)} {i.id} has not beaten since "
                                         f"{i.heartbeat_at:%Y-%m-%d %H:%M:%S}", details={"roles": list(i.roles)})
            for i in silent if i.id not in gone}


def replaced(silent: list[InstanceRecord], instances: list[InstanceRecord]) -> set[str]:
    """The silent instances a restart replaced: each has a successor of its own, an instance of the same roles
    that started after its last heartbeat (a restarted process registers under a new id, on another host too
    when it runs in a container). One successor per instance, so two crashed workers and one restarted leave
    one missing: the earliest dead take the earliest successors, on their own host first."""
    taken: set[str] = set()
    gone: set[str] = set()
    for dead in sorted(silent, key=lambda i: i.heartbeat_at):
        successors = [i for i in instances if i.id != dead.id and i.id not in taken
                      and sorted(i.roles) == sorted(dead.roles) and i.started_at > dead.heartbeat_at]
        if successors:
            heir = min(successors, key=lambda i: (i.host != dead.host, i.started_at))
            taken.add(heir.id)
            gone.add(dead.id)
    return gone


def queue_saturated(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A queue running at capacity while its backlog (runnable tasks preferring it, or unassigned) grew
    over the last three evaluations."""
    running = reads.running_per_queue()
    waiting = reads.runnable_count()
    sightings = {}
    for queue in reads.enabled_queues():
        history = ctx.backlog.setdefault(queue.name, [])
        history.append(waiting if running.get(queue.name, 0) >= queue.capacity else -1)
        del history[:-3]
        if len(history) == 3 and history[0] >= 0 and history[0] < history[1] <= history[2]:
            sightings[f"queue:{queue.name}"] = Sighting(
                "warning", f"queue {queue.name} runs {running.get(queue.name, 0)} of {queue.capacity} jobs and "
                           f"{waiting} task(s) wait, more than before", queue=queue.name)
    return sightings


BACKLOG_EVALUATIONS = 4  # backlog_growing: rising at each of the last three evaluations


def backlog_growing(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A table whose pending plans, or whose delta commits awaiting a compaction (its pending log files),
    rose at each of the last three evaluations: work arrives faster than it is served."""
    pending = reads.pending_per_table()
    sightings = {}
    for table_id, name, state in reads.enabled_table_digests():
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


def predicted_timeout(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """Early warning (manager.early_warning): a running or waiting task likely to pass its timeout, by a
    model of its table's past runs of the action (duration against bytes and the queue's load) and, for a
    running one, how long it has run already. The timeout is the one the worker applies (its heartbeat's
    facts): a running task's, its worker's; a waiting task's, the longest a live worker applies (one that beat
    within TMS_MONITOR_INSTANCE_MISSING_SECONDS; none: the longest of those not yet forgotten; none at all:
    nothing to judge it by)."""
    instances = reads.instances()
    timeouts = worker_timeouts(instances)
    alive = ctx.now - timedelta(seconds=ctx.settings.manager.monitor_instance_missing_seconds)
    live = worker_timeouts(i for i in instances if i.heartbeat_at >= alive)
    longest = max(live.values(), default=max(timeouts.values(), default=None))
    loads = _queue_loads(reads)
    models: dict[tuple[int, str], list[Run]] = {}
    sightings = {}
    for t in reads.running_or_runnable():
        size = statistics_of(t.payload).plan_bytes
        if not size:
            continue
        history = models.get((t.table_id, t.service))
        if history is None:
            history = models[(t.table_id, t.service)] = _history(reads, t.table_id, t.service)
        running = t.state == S.RUNNING and t.started_at is not None
        timeout = timeouts.get(t.lease_owner or "", longest) if running else longest
        if timeout is None:
            continue
        elapsed = (ctx.now - t.started_at).total_seconds() if running and t.started_at else 0.0
        # A running task at the load it started under (as its peers are known), a waiting one at today's.
        load = reads.load_at_start(t.id) if running else \
            loads.get(t.queue or "", min(loads.values(), default=0.0))
        predicted = forecast(history, size, load, elapsed, timeout)
        if predicted is not None and predicted.warn:
            sightings[f"task:{t.id}"] = Sighting(
                "warning", f"{t.service} {t.instant} ({'running' if running else 'waiting'}) is predicted to take "
                           f"{predicted.seconds:.0f} s, past its timeout of {timeout:.0f} s with probability "
                           f"{predicted.probability:.2f}", table_id=t.table_id, task_id=t.id, queue=t.queue,
                details={"predicted_seconds": round(predicted.seconds, 1),
                         "probability": round(predicted.probability, 3), "elapsed_seconds": round(elapsed, 1),
                         "queue_load": round(load, 2), "history": len(history)})
    return sightings


def _queue_loads(reads: MonitorReads) -> dict[str, float]:
    """Each enabled queue's running jobs per slot now."""
    running = reads.running_per_queue()
    return {q.name: running.get(q.name, 0) / max(q.capacity, 1) for q in reads.enabled_queues()}


def _history(reads: MonitorReads, table_id: int, action: str) -> list[Run]:
    """The table's last succeeded runs of `action`: bytes, seconds, and their queue's load when they started."""
    return [Run(stats.plan_bytes, (finished - started).total_seconds(), load)
            for stats, started, finished, load in reads.succeeded_runs(table_id, action, HISTORY)]


def freshness_at_risk(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A MERGE_ON_READ table with a freshness objective whose oldest uncompacted delta commit is forecast to be
    compacted after its deadline (tms.planning.freshness): warned before the objective is missed, with the lead."""
    if TableService.COMPACTION not in ctx.settings.planner.services:
        return {}
    options = planner_options(ctx.settings)
    sightings = {}
    for row in reads.enabled_tables("MERGE_ON_READ"):
        policy = row.policy
        digest = stored_digest(row, options)
        if not policy.freshness_max_uncompacted_seconds or digest is None:
            continue
        durations = [(finished - started).total_seconds() for _, started, finished, _ in
                     reads.succeeded_runs(row.id, TableService.COMPACTION, HISTORY)]
        predicted = forecast_freshness(digest, policy, ctx.now, durations)
        if predicted is None or not predicted.at_risk:
            continue
        when = f"at {predicted.compacted_at:%Y-%m-%d %H:%M:%S} UTC" if predicted.compacted_at else "not in sight"
        sightings[f"table:{row.id}"] = Sighting(
            "warning", f"table {row.name}: its oldest uncompacted delta commit "
                       f"({predicted.oldest:%Y-%m-%d %H:%M:%S} UTC) must be compacted by "
                       f"{predicted.deadline:%Y-%m-%d %H:%M:%S} UTC; the forecast compaction is {when}",
            table_id=row.id,
            details={"objective_seconds": policy.freshness_max_uncompacted_seconds,
                     "oldest_uncompacted": predicted.oldest.isoformat(), "deadline": predicted.deadline.isoformat(),
                     "forecast_planned_at": predicted.planned_at.isoformat() if predicted.planned_at else None,
                     "forecast_compacted_at": predicted.compacted_at.isoformat() if predicted.compacted_at else None,
                     "lead_seconds": round(predicted.lead_seconds, 1)})
    return sightings


def backup_failed(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A table whose newest backup failed for good (retries exhausted): firing until a backup succeeds."""
    sightings = {}
    for row in reads.tables_with_backups():
        failed = reads.backup_history(row.id).failed_for_good
        if failed is not None:
            sightings[f"table:{row.id}"] = Sighting(
                "critical", f"table {row.name}: backup {failed.instant} failed for good after attempt "
                            f"{failed.attempt}: {failed.retry_reason or failed.error or 'no reason recorded'}",
                table_id=row.id, task_id=failed.id, queue=failed.queue, details={"error": failed.error})
    return sightings


def backup_missed(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A table whose scheduled backup is not done `tms.backup.grace.seconds` after its time."""
    sightings = {}
    for row in reads.tables_with_backups():
        policy = row.policy
        history = reads.backup_history(row.id)
        fire = missed_since(policy.backup_schedule, history.first_requested, history.last_succeeded_request,
                            ctx.now, timedelta(seconds=policy.backup_grace_seconds))
        if fire is not None:
            last = history.last_succeeded_finish
            sightings[f"table:{row.id}"] = Sighting(
                "warning", f"table {row.name}: the backup due at {fire:%Y-%m-%d %H:%M} UTC "
                           f"({policy.backup_schedule}) is not done; last backup "
                           f"{f'{last:%Y-%m-%d %H:%M:%S} UTC' if last else 'never'}",
                table_id=row.id, details={"due_at": fire.isoformat(), "schedule": policy.backup_schedule,
                                          "last_backup_at": last.isoformat() if last else None})
    return sightings


def restore_done(reads: MonitorReads, ctx: MonitorContext) -> dict[str, Sighting]:
    """A table restored in place to a savepoint, or a backup version restored to a new base path (its task
    succeeded): told once (to the webhooks), resolved a day later. A restore changes what readers see, so
    every owner of the table must hear of it."""
    since = ctx.now - RESTORE_DONE_FOR
    out = {f"task:{t.id}": Sighting("info", f"table restored in place to savepoint {t.target_instant} "
                                            f"(restore {t.instant})",
                                    table_id=t.table_id, task_id=t.id, details={"savepoint": t.target_instant})
           for t in reads.savepoint_restores_done_since(since)}
    for t in reads.backup_restores_done_since(since):
        request = t.payload.body
        if not isinstance(request, BackupRequest):  # a backup_restore task's always is
            continue
        version, target = request.version, request.target_path
        out[f"task:{t.id}"] = Sighting("info", f"backup version {version} of table {t.table_id} was restored to "
                                               f"{target}", table_id=t.table_id, task_id=t.id,
                                       details={"version": version, "target_path": target})
    return out


RULES: dict[str, Rule] = {
    "task_failed": task_failed, "task_timeout": task_timeout, "not_scheduled": not_scheduled,
    "held_too_long": held_too_long, "instance_down": instance_down, "queue_saturated": queue_saturated,
    "predicted_timeout": predicted_timeout, "backlog_growing": backlog_growing,
    "freshness_at_risk": freshness_at_risk, "backup_failed": backup_failed, "backup_missed": backup_missed,
    "restore_done": restore_done,
}


def evaluate(lease: LeaderLease, epoch: int, ctx: MonitorContext) -> dict[str, tuple[int, int]]:
    """Evaluate every rule in one fenced transaction: kind -> (fired, resolved)."""
    changes: dict[str, tuple[int, int]] = {}
    with lease.fenced(epoch) as session:
        reads = MonitorReads(session)
        ctx.now = reads.now()
        alerts = AlertRepo(session)
        for kind, rule in RULES.items():
            fired, resolved = alerts.sync(kind, rule(reads, ctx))
            if fired or resolved:
                changes[kind] = (len(fired), len(resolved))
    for kind, (n_fired, n_resolved) in changes.items():
        log.info("alerts %s: %s fired, %s resolved [epoch %s]", kind, n_fired, n_resolved, epoch)
    return changes
