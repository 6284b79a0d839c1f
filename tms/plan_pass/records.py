"""The database side of planning: every plan on a table's timeline becomes exactly one task row.

A plan is written to the timeline first and its task recorded after it, in the transaction that holds
the table's planning lock (invariant 1). A crash in between leaves a plan without a task; adoption turns
it (and plans scheduled by writers) into a task on the next pass, and `TaskRepo.create` never records
two tasks for one instant. Held v6 compactions stay BLOCKED until their sync finds no blocker left."""
from __future__ import annotations

import logging
from collections.abc import Collection

from sqlalchemy.orm import Session

from tms.db import AlertRepo, ArchiveTaskRepo, TableRecord, TaskRecord, TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import parse_rollback_plan
from tms.planning.adoption import find_unknown_plans
from tms.planning.compensation import held_compactions, sync_held_plan
from tms.planning.errors import CompensationError
from tms.planning.planned import Planned
from tms.planning.policy import TablePolicy
from tms.planning.stats import PlanStats, plan_stats
from tms.table_service import TableService
from tms.task_payload import ArchiveRequest, PlanStatistics

log = logging.getLogger(__name__)

_PLAN_ACTIONS = (Action.COMPACTION, Action.CLUSTERING, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK)
# A running or finished task is past holding: its plan left the requested state.
_SETTLED = (TaskState.RUNNING, TaskState.SUCCEEDED)


def stats_record(stats: PlanStats) -> PlanStatistics:
    """PlanStats as a task's payload (what the worker sizes the job by)."""
    return PlanStatistics(operations=stats.operations, operation_bytes=stats.operation_bytes,
                          largest_file_group_bytes=stats.largest_file_group_bytes, total_bytes=stats.total_bytes,
                          within_budget=stats.within_budget)


class TaskRecorder:
    """Records the plans of one table, locked for planning in `session`'s transaction."""

    def __init__(self, session: Session, row: TableRecord, table: HudiTable, policy: TablePolicy | None = None):
        self.session = session
        self.policy = policy  # the table's effective policy: an archive task's plan keeps it
        self.row = row
        self.table = table
        self.tasks = TaskRepo(session)
        self.recorded: list[TaskRecord] = []

    def record(self, planned: Planned, *, planned_by_tms: bool = True) -> TaskRecord:
        """The task of a plan already on the timeline (the existing one if it was recorded before);
        `planned_by_tms`: TMS wrote the plan (False: adopted). An archival writes nothing on the timeline: its
        task names the request, and its plan the latest instant it archives through."""
        if planned.service == TableService.ARCHIVE:
            task = ArchiveTaskRepo(self.session).request(
                self.row.id, ArchiveRequest(archive_through=planned.instant, instants=planned.stats.operations,
                                            policy=self.policy.explicit() if self.policy is not None else {}),
                priority=self.row.priority, queue=self.row.queue)
            self.recorded.append(task)
            log.info("table %s: archive through %s (%s instants) planned as task %s", self.row.id, planned.instant,
                     planned.stats.operations, task.id)
            return task
        target = None
        if planned.service == TableService.ROLLBACK:
            target = parse_rollback_plan(self.table.timeline.read_plan(planned.instant)).instant_to_rollback
        task, created = self.tasks.create(
            table_id=self.row.id, service=planned.service, instant=planned.instant,
            state=TaskState.BLOCKED if planned.blockers else TaskState.RUNNABLE,
            target_instant=target.commit_time if target else None, priority=self.row.priority,
            queue=self.row.queue, blockers=planned.blockers, payload=stats_record(planned.stats),
            planned_by_tms=planned_by_tms)
        if created:
            self.recorded.append(task)
            log.info("table %s: %s %s planned%s%s", self.row.id, planned.service, planned.instant,
                     f", held by {', '.join(planned.blockers)}" if planned.blockers else "",
                     f", {planned.scope}" if planned.scope else "")
        return task

    def adopt_unknown_plans(self, unrunnable: Collection[str] = ()) -> None:
        """A task for each requested plan on the timeline that has none, except the `unrunnable` ones (plans
        TMS cannot run: left to the writers)."""
        pending = [i.timestamp for i in self.table.timeline.pending(_PLAN_ACTIONS) if i.is_requested]
        if not pending:
            return
        known = self.tasks.instants_with_tasks(self.row.id, pending) | set(unrunnable)
        for planned in find_unknown_plans(self.table, known):
            self.record(planned, planned_by_tms=False)

    def sync_held_plans(self) -> None:
        """Sync every held compaction plan with its late commits (adding their log files), then release
        the BLOCKED tasks with no blocker left. A plan that can no longer be synced raises an alert and
        its task is left alone."""
        blocked = {t.instant: t for t in self.tasks.in_state(self.row.id, TaskState.BLOCKED)}
        for tc in sorted(set(held_compactions(self.table)) | set(blocked)):
            try:
                remaining = sync_held_plan(self.table, tc)
            except CompensationError as e:
                self._alert_compensation(tc, blocked.get(tc), e)
                continue
            task = blocked.get(tc) or self.tasks.for_instant(self.row.id, tc)
            if task is None or task.state in _SETTLED or list(task.blockers) == remaining:
                continue
            self._hold_or_release(task, remaining, stats_record(plan_stats(self.table, tc)))

    def _hold_or_release(self, task: TaskRecord, blockers: list[str], stats: PlanStatistics) -> None:
        """The task of a synced plan: runnable once no blocker is left, held while one is. A None from a
        compare-and-set means an operator changed the task meanwhile; the next pass syncs it again."""
        state = TaskState(task.state)
        if state is TaskState.BLOCKED and not blockers:
            self.tasks.transition(task.id, expected_state=state, expected_version=task.version,
                                  to=TaskState.RUNNABLE, blockers=[], stats=stats)
            log.info("table %s: compaction %s synced with its late commits: runnable", self.row.id, task.instant)
        elif state is TaskState.RUNNABLE and blockers:  # a writer began before Tc after the task was recorded
            self.tasks.transition(task.id, expected_state=state, expected_version=task.version,
                                  to=TaskState.BLOCKED, blockers=blockers, stats=stats)
        else:
            self.tasks.update_blockers(task.id, expected_state=state, expected_version=task.version,
                                       blockers=blockers, stats=stats)

    def _alert_compensation(self, tc: str, task: TaskRecord | None, error: CompensationError) -> None:
        log.error("table %s: %s", self.row.id, error)
        AlertRepo(self.session).raise_alert(
            kind="compensation_failed", severity="critical", message=str(error),
            fingerprint=f"compensation_failed:{self.row.id}:{tc}", table_id=self.row.id,
            task_id=task.id if task else None, details={"instant": tc})

    def planning_failed_fingerprint(self, step: str) -> str:
        return f"planning_failed:{self.row.id}:{step}"

    def alert_planning_failed(self, step: str, error: Exception) -> None:
        """One open alert per table and step (adoption, compensation or a table service)."""
        log.warning("table %s: %s failed: %s", self.row.id, step, error)
        AlertRepo(self.session).raise_alert(
            kind="planning_failed", severity="warning", message=f"{step} failed: {error}",
            fingerprint=self.planning_failed_fingerprint(step), table_id=self.row.id, details={"step": step})
