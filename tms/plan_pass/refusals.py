"""Nothing planned that cannot run: before a pass writes anything for a table service it asks the library
whether TMS can run the service on the table (`tms.planning.capabilities`), and requested plans on the timeline
that TMS can no longer run (a writer enabled a metadata-table index TMS cannot keep, changed the merge
mode...) are settled: TMS's own are unscheduled and their tasks cancelled; a writer's are left to the writers
(TMS never removes them) and their tasks cancelled. Each case raises an alert saying why, one per
(type, subject), resolved by a later pass once its condition has cleared:

- `service_refused` (table, service): a due table service TMS cannot run on the table;
- `plan_rolled_back` (table, instant): TMS removed a plan it had written; clears when the service can run;
- `plan_unrunnable` (table, instant): a writer's plan TMS cannot run; clears when it can, or it is gone."""
from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from tms.db import AlertRepo, RolloutRepo, TableRecord, TaskRepo, TaskState
from tms.hudi.errors import InstantConflictError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant
from tms.planning.capabilities import Capability, capabilities, unrunnable_plans
from tms.table_service import TableService

log = logging.getLogger(__name__)

SERVICE_REFUSED = "service_refused"
PLAN_ROLLED_BACK = "plan_rolled_back"
PLAN_UNRUNNABLE = "plan_unrunnable"
KINDS = (SERVICE_REFUSED, PLAN_ROLLED_BACK, PLAN_UNRUNNABLE)
# A worker runs the task (its executor refuses a plan it cannot run before it starts), or it is over.
_RUNNING_OR_DONE = (TaskState.RUNNING, TaskState.SUCCEEDED)
_ENDED = (*_RUNNING_OR_DONE, TaskState.CANCELLED)


def service_of(instant: Instant) -> str:
    """The table service a plan's action is (a v6 replacecommit plan is a clustering's)."""
    return TableService.CLUSTERING.value if instant.action == Action.REPLACE_COMMIT else instant.action


def hudi_engine_of(session: Session, row: TableRecord) -> str | None:
    """The Hudi engine that runs the table's tasks (its rollout rule's stable engine), if one does: it runs the
    compactions and clusterings TMS's own engine cannot (tms.planning.capabilities)."""
    return RolloutRepo(session).hudi_engine_for(queue=row.queue, database=row.database, table=row.name)


class Refusals:
    """What TMS can run on one table locked for planning, decided once per pass."""

    def __init__(self, session: Session, row: TableRecord, table: HudiTable):
        self.session = session
        self.row = row
        self.table = table
        self.alerts = AlertRepo(session)
        self.hudi_engine = hudi_engine_of(session, row)
        self.capabilities: dict[str, Capability] = capabilities(table, self.hudi_engine)

    def _subject(self, what: str) -> str:
        return f"table:{self.row.id}:{what}"

    def can_run(self, service: str) -> bool:
        return self.capabilities[service].can_run

    def refuse(self, service: str) -> None:
        """Raise (or count a sighting of) the `service_refused` alert of a due service TMS cannot run."""
        reason = self.capabilities[service].reason
        log.warning("table %s: %s refused: %s", self.row.id, service, reason)
        self.alerts.raise_alert(
            kind=SERVICE_REFUSED, severity="warning", subject=self._subject(service),
            fingerprint=f"{SERVICE_REFUSED}:{self._subject(service)}", table_id=self.row.id,
            message=f"{service} is due but not planned: TMS cannot run {service} on table {self.table.name}: "
                    f"{reason}", details={"service": service, "reason": reason})

    def settle_unrunnable_plans(self) -> set[str]:
        """Unschedule TMS's requested plans that can no longer run, cancel the tasks of the writers' ones, alert
        on both, and resolve the alerts whose condition cleared. Returns the instants of the writers' plans TMS
        cannot run (not to be adopted)."""
        tasks = TaskRepo(self.session)
        left: set[str] = set()
        for instant, reason in unrunnable_plans(self.table, self.hudi_engine):
            service = service_of(instant)
            task = tasks.for_instant(self.row.id, instant.timestamp)
            if task is not None and task.planned_by_tms:
                if task.state not in _RUNNING_OR_DONE:
                    self._unschedule(instant, service, reason, task.id, TaskState(task.state), task.version)
                continue
            left.add(instant.timestamp)
            if task is not None and task.state not in _ENDED:
                tasks.transition(task.id, expected_state=TaskState(task.state), expected_version=task.version,
                                 to=TaskState.CANCELLED, error=f"TMS cannot run this plan: {reason}")
            self.alerts.raise_alert(
                kind=PLAN_UNRUNNABLE, severity="warning", subject=self._subject(instant.timestamp),
                fingerprint=f"{PLAN_UNRUNNABLE}:{self._subject(instant.timestamp)}", table_id=self.row.id,
                message=f"the writers' {service} plan {instant.timestamp} on table {self.table.name} cannot be run "
                        f"by TMS: {reason}; it is left on the timeline for the table's writers",
                details={"service": service, "instant": instant.timestamp, "reason": reason})
        self._resolve_cleared(left)
        return left

    def _unschedule(self, instant: Instant, service: str, reason: str, task_id: int, state: TaskState,
                    version: int) -> None:
        """Cancel the task, then remove the plan, both or neither: a worker claiming the task meanwhile makes
        the compare-and-set fail, a writer starting the plan meanwhile makes the removal fail."""
        try:
            with self.session.begin_nested():
                if state is not TaskState.CANCELLED and TaskRepo(self.session).transition(
                        task_id, expected_state=state, expected_version=version, to=TaskState.CANCELLED,
                        error=f"rolled back by TMS: it can no longer run: {reason}") is None:
                    return
                self.table.timeline.unschedule(instant.timestamp)
        except InstantConflictError as e:
            log.info("table %s: %s plan %s left: %s", self.row.id, service, instant.timestamp, e)
            return
        log.warning("table %s: %s plan %s rolled back: %s", self.row.id, service, instant.timestamp, reason)
        self.alerts.raise_alert(
            kind=PLAN_ROLLED_BACK, severity="warning", subject=self._subject(instant.timestamp),
            fingerprint=f"{PLAN_ROLLED_BACK}:{self._subject(instant.timestamp)}", table_id=self.row.id,
            task_id=task_id, message=f"TMS rolled back its {service} plan {instant.timestamp} on table "
                                     f"{self.table.name}: it can no longer run: {reason}",
            details={"service": service, "instant": instant.timestamp, "reason": reason})

    def _resolve_cleared(self, unrunnable_writer_plans: set[str]) -> None:
        for alert in self.alerts.open_for_table(self.row.id, KINDS):
            service = alert.details.get("service", "")
            runnable = service in self.capabilities and self.capabilities[service].can_run
            if alert.kind == PLAN_UNRUNNABLE:
                cleared = runnable or alert.details.get("instant") not in unrunnable_writer_plans
            else:
                cleared = runnable
            if cleared:
                self.alerts.resolve(alert.fingerprint)
