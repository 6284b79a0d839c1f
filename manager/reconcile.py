"""Reconciliation: the database's tasks made to agree with the tables' timelines (the timeline is the truth
about a table, invariant 1), at the leader's start and every `manager_reconcile_seconds`. (Not a restore:
that is Hudi's restore action to a savepoint, tms/execute/restore.py, and a backup's, tms/backup/restore.py.)

- a running task whose worker died (lease expired) is runnable again (its attempt LOST);
- a task not running whose instant completed on the timeline is SUCCEEDED (an attempt completed it but
  could not record it, another process ran the plan, or a cancel raced the job's completion);
- a task whose instant was removed from the timeline is CANCELLED, with the reason.
An instant left inflight by a failed attempt is rolled back by the task's next attempt (worker/supervisor)
before it runs again, or resumed where its executor can (clean, rollback)."""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from tms.db import TaskRepo, TaskState
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State
from tms.leadership import LeaderLease
from tms.table_service import names_request

log = logging.getLogger(__name__)
S = TaskState
# Not RUNNING (its worker holds it) nor PENDING (its plan is not on the timeline yet).
RECONCILED = (S.BLOCKED, S.RUNNABLE, S.FAILED, S.SUSPENDED, S.CANCELLED)
CANCELLED_LOOKBACK = timedelta(days=1)  # a cancel racing a completion shows up within this


@dataclass
class ReconcileReport:
    lease_expired: list[int] = field(default_factory=list)
    succeeded: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.lease_expired or self.succeeded or self.cancelled)


def reconcile(lease: LeaderLease, epoch: int, context: HudiContext = DEFAULT_CONTEXT) -> ReconcileReport:
    report = ReconcileReport()
    with lease.fenced(epoch) as session:
        tasks = TaskRepo(session)
        for task in tasks.expired_leases():
            if tasks.requeue_expired(task.id, fencing_token=task.fencing_token) is not None:
                report.lease_expired.append(task.id)
    verdicts = _read_timelines(lease, context)
    if verdicts:
        with lease.fenced(epoch) as session:
            tasks = TaskRepo(session)
            for (task_id, state, version), (to, reason) in verdicts.items():
                changes = {"error": reason} if to is S.CANCELLED else {"next_attempt_at": None}
                if tasks.transition(task_id, expected_state=state, expected_version=version, to=to,
                                    **changes) is not None:
                    (report.succeeded if to is S.SUCCEEDED else report.cancelled).append(task_id)
    for task_id in report.lease_expired:
        log.info("task %s: its worker's lease expired; runnable again", task_id)
    for task_id in report.succeeded:
        log.info("task %s: its instant is completed on the timeline; SUCCEEDED", task_id)
    for task_id in report.cancelled:
        log.info("task %s: its instant was removed from the timeline; CANCELLED", task_id)
    return report


def _read_timelines(lease: LeaderLease, context: HudiContext) -> dict[tuple[int, S, int], tuple[S, str | None]]:
    """(task, state, version) -> (the state the timeline says it is in, a reason), for the tasks it differs."""
    since = datetime.now(UTC) - CANCELLED_LOOKBACK
    with lease.database.transaction() as session:
        rows = TaskRepo(session).in_states_with_tables(RECONCILED)
    by_table: dict[str, list] = defaultdict(list)
    for row in rows:
        if names_request(row.service):  # a backup's or TTL task's instant names its request, not a timeline instant
            continue
        if row.state != S.CANCELLED or row.updated_at >= since:
            by_table[row.base_path].append(row)
    verdicts: dict[tuple[int, S, int], tuple[S, str | None]] = {}
    for base_path, table_rows in by_table.items():
        try:
            timeline = HudiTable.load(base_path, context=context).timeline
            earliest = min((i.timestamp for i in timeline.instants()), default=None)
        except Exception as exc:  # an unreadable table: the planner's table_unreadable alert says so
            log.debug("reconcile: cannot read %s: %s", base_path, exc)
            continue
        for row in table_rows:
            states = timeline.states_of(row.instant)
            key = (row.id, S(row.state), row.version)
            if State.COMPLETED in states:
                verdicts[key] = (S.SUCCEEDED, None)
            elif not states and row.state != S.CANCELLED and earliest is not None and row.instant > earliest:
                verdicts[key] = (S.CANCELLED, f"its instant {row.instant} was removed from the timeline")
    return verdicts
