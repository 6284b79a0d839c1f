"""Tasks and their attempts. Every state change is a compare-and-set: the UPDATE names the state and
version it expects, so of two processes racing for one transition exactly one wins; the loser gets
None back and re-reads. A worker's writes are fenced by its lease's fencing token (invariant 4)."""
from __future__ import annotations

import hmac
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from tms.table_service import CLAIMED_FIRST, LIGHT_SERVICES, TableService
from tms.task_payload import PayloadBody, PlanStatistics, payload_of

from ..errors import ConflictError, IllegalTransitionError, NotFoundError
from ..models import RegisteredTable, Task, TaskAttempt
from ..records import AttemptRecord, TaskRecord, records_of, task_of, tasks_of
from ..states import ACTION_SOURCES, OperatorAction, TaskState, can_transition
from ..wakeups import TASK_RUNNABLE, notify

S = TaskState


@dataclass(frozen=True)
class FailureRecord:
    """How a failed attempt is classified (see worker/retry_policy.py)."""
    kind: str                         # crash, timeout, oom, lost, stopped, held, conflict, permanent
    retryable: bool
    reason: str                       # why it is (not) retried, shown on the task
    retry_in_seconds: float | None    # None: not retried (not retryable, or attempts exhausted)
    memory_growth: float = 1.0        # an out-of-memory retry asks for more executor memory
    uncounted: bool = False           # the retry starts a new series: this attempt counts against no limit
_CAS_RETRIES = 5
# How an attempt ended, by the state its task left RUNNING for.
_ATTEMPT_OUTCOME = {S.SUCCEEDED: "SUCCEEDED", S.FAILED: "FAILED", S.CANCELLED: "CANCELLED", S.RUNNABLE: "LOST"}
# Columns a transition may change besides the state (the rest have their own methods).
_TRANSITION_FIELDS = frozenset({"error", "blockers", "run_after", "requested_resources",
                                "queue", "priority", "spark_app_id", "started_at", "finished_at",
                                "next_attempt_at", "retry_reason"})


_LIGHT = [s.value for s in LIGHT_SERVICES]
_CLAIMED_FIRST_RANK = case((Task.service.in_([s.value for s in CLAIMED_FIRST]), 0), else_=1)


class TaskRepo:
    def __init__(self, session: Session):
        self.session = session

    # --- creation and queries -----------------------------------------------------------------------
    def create(self, *, table_id: int, service: str, instant: str, state: TaskState = S.PENDING,
               target_instant: str | None = None, priority: int = 0, queue: str | None = None,
               blockers: Iterable[str] = (), payload: PayloadBody | None = None,
               requested_resources: dict[str, Any] | None = None, planned_by_tms: bool = False
               ) -> tuple[TaskRecord, bool]:
        """Record the task of an instant, or return the one already recorded: (task, created).
        One task per (table, instant), so a plan adopted twice is never run twice. `payload`: the plan's
        statistics or the request (tms.task_payload), of the service's kind (ValueError otherwise)."""
        stmt = (insert(Task).values(
            table_id=table_id, service=service, instant=instant, state=state.value, target_instant=target_instant,
            priority=priority, queue=queue, blockers=list(blockers),
            plan_stats=payload_of(service, payload).body.stored(),
            requested_resources=requested_resources or {}, planned_by_tms=planned_by_tms)
            .on_conflict_do_nothing(constraint="uq_tasks_table_id_instant").returning(Task.id))
        task_id = self.session.execute(stmt).scalar()
        if task_id is not None:
            if state is S.RUNNABLE:
                notify(self.session, TASK_RUNNABLE)
            return self.get(task_id), True
        existing = self.for_instant(table_id, instant)
        if existing is None:  # the conflicting task was deleted meanwhile
            raise ConflictError(f"task of instant {instant} of table {table_id} changed meanwhile; retry")
        return existing, False

    def get(self, task_id: int) -> TaskRecord:
        task = self.session.get(Task, task_id, populate_existing=True)
        if task is None:
            raise NotFoundError(f"no task with id {task_id}")
        return TaskRecord.of(task)

    def for_instant(self, table_id: int, instant: str) -> TaskRecord | None:
        return task_of(self.session.scalar(select(Task).where(Task.table_id == table_id, Task.instant == instant)
                                           .execution_options(populate_existing=True)))

    def instants_with_tasks(self, table_id: int, instants: Iterable[str]) -> set[str]:
        """Those of `instants` the table has a task for (the planner's adoption asks)."""
        wanted = list(instants)
        if not wanted:
            return set()
        return set(self.session.scalars(select(Task.instant).where(Task.table_id == table_id,
                                                                   Task.instant.in_(wanted))))

    def in_state(self, table_id: int, state: TaskState) -> list[TaskRecord]:
        """Every task of a table in one state, oldest first."""
        return tasks_of(self.session.scalars(select(Task).where(Task.table_id == table_id, Task.state == state.value)
                                             .order_by(Task.id), execution_options={"populate_existing": True}))

    def find(self, *, table_id: int | None = None, service: str | None = None, state: TaskState | None = None,
             since: datetime | None = None, until: datetime | None = None, limit: int = 50,
             offset: int = 0, before_id: int | None = None, count: bool = True) -> tuple[list[TaskRecord], int]:
        """A page of tasks (newest first) matching every given filter on creation time, and the total;
        `before_id` starts the page after that task (keyset pagination); without `count`, the total is not
        counted (0)."""
        conditions = []
        if table_id is not None:
            conditions.append(Task.table_id == table_id)
        if service is not None:
            conditions.append(Task.service == service)
        if state is not None:
            conditions.append(Task.state == state.value)
        if since is not None:
            conditions.append(Task.created_at >= since)
        if until is not None:
            conditions.append(Task.created_at < until)
        total = self.session.scalar(select(func.count()).select_from(Task).where(*conditions)) if count else 0
        if before_id is not None:
            conditions.append(Task.id < before_id)
        rows = self.session.scalars(select(Task).where(*conditions).order_by(Task.id.desc())
                                    .limit(limit).offset(offset))
        return tasks_of(rows), total or 0

    def attempts(self, task_id: int) -> list[AttemptRecord]:
        return records_of(AttemptRecord, self.session.scalars(
            select(TaskAttempt).where(TaskAttempt.task_id == task_id).order_by(TaskAttempt.attempt)))

    def counts_by_state(self, table_id: int | None = None) -> dict[str, int]:
        stmt = select(Task.state, func.count()).group_by(Task.state)
        if table_id is not None:
            stmt = stmt.where(Task.table_id == table_id)
        rows = self.session.execute(stmt)
        return {state: count for state, count in rows}

    def health_counts(self, table_id: int) -> dict[str, int]:
        """The table's tasks by state as its health score reads them: FAILED counts only the tasks that failed
        for good (no retry to come, as `failed_for_good`), not those awaiting a retry."""
        counts = self.counts_by_state(table_id=table_id)
        if counts.get(S.FAILED.value):
            counts[S.FAILED.value] = self.session.execute(
                select(func.count()).select_from(Task).where(Task.table_id == table_id, Task.state == S.FAILED.value,
                                                             Task.next_attempt_at.is_(None))).scalar_one()
        return counts

    def created_by_hour(self, since: datetime) -> list[tuple[datetime, str, int]]:
        """(hour, state, count) of the tasks created since `since`, by the hour they were created and the
        state they are in now: the dashboard's tasks-over-time chart."""
        hour = func.date_trunc("hour", Task.created_at)
        rows = self.session.execute(select(hour, Task.state, func.count()).where(Task.created_at >= since)
                                    .group_by(hour, Task.state).order_by(hour))
        return [(at, state, count) for at, state, count in rows]

    def running_by_queue(self, *, light: bool = True) -> dict[str | None, int]:
        """Running tasks per queue; `light=False`: of the services not in LIGHT_SERVICES, what each queue's
        capacity is measured against."""
        stmt = select(Task.queue, func.count()).where(Task.state == S.RUNNING)
        if not light:
            stmt = stmt.where(Task.service.not_in(_LIGHT))
        rows = self.session.execute(stmt.group_by(Task.queue))
        return {queue: count for queue, count in rows}

    def tables_rolling_back(self, table_ids: Iterable[int]) -> set[int]:
        """Those of `table_ids` with a rollback task runnable or running. Their other table services wait
        for it, as Hudi rolls failed writes back before it runs a table service: a compaction or clustering
        must not start while a write before it is still on the timeline."""
        wanted = list(table_ids)
        if not wanted:
            return set()
        return set(self.session.scalars(select(Task.table_id).where(
            Task.table_id.in_(wanted), Task.service == TableService.ROLLBACK,
            Task.state.in_([S.RUNNABLE.value, S.RUNNING.value])).distinct()))

    # --- compare-and-set transitions ------------------------------------------------------------------
    def transition(self, task_id: int, *, expected_state: TaskState, expected_version: int, to: TaskState,
                   stats: PlanStatistics | None = None, **changes: Any) -> TaskRecord | None:
        """Move the task from `expected_state` (at `expected_version`) to `to`, setting `changes` (and the plan's
        new `stats`, a synced plan's).
        Returns the updated task, or None if it was not in that state and version any more.
        RUNNING is entered only through `claim`; leaving it ends the lease and the attempt."""
        if to is S.RUNNING or not can_transition(expected_state, to):
            raise IllegalTransitionError(f"task {task_id}: {expected_state} -> {to} is not a legal transition")
        unknown = set(changes) - _TRANSITION_FIELDS
        if unknown:
            raise ValueError(f"transition cannot set {sorted(unknown)}")
        values: dict[str, Any] = {"state": to.value, "version": Task.version + 1, **changes}
        if stats is not None:
            values["plan_stats"] = stats.stored()
        if expected_state is S.RUNNING:
            values.update(lease_owner=None, lease_expires_at=None)
        if to in (S.SUCCEEDED, S.FAILED, S.CANCELLED) and "finished_at" not in changes:
            values["finished_at"] = func.now()
        task = self._cas(values, Task.id == task_id, Task.state == expected_state.value,
                         Task.version == expected_version)
        if task is not None and expected_state is S.RUNNING:
            self._update_attempt(task_id, task.fencing_token, outcome=_ATTEMPT_OUTCOME[to],
                                 error=changes.get("error"), finished_at=func.now())
        if task is not None and to is S.RUNNABLE:
            notify(self.session, TASK_RUNNABLE)
        return task

    def update_blockers(self, task_id: int, *, expected_state: TaskState, expected_version: int,
                        blockers: Iterable[str], stats: PlanStatistics) -> TaskRecord | None:
        """Record the blockers (and statistics) of a held plan after a sync, keeping the task's state;
        a compare-and-set like `transition`. None if the task changed meanwhile."""
        return self._cas({"blockers": list(blockers), "plan_stats": stats.stored(), "version": Task.version + 1},
                         Task.id == task_id, Task.state == expected_state.value, Task.version == expected_version)

    def _cas(self, values: dict[str, Any], *conditions) -> TaskRecord | None:
        stmt = update(Task).where(*conditions).values(**values).returning(Task)
        return task_of(self.session.scalars(stmt, execution_options={"populate_existing": True}).one_or_none())

    # --- worker: claim, lease, fence, finish --------------------------------------------------------
    def claim(self, task_id: int, *, expected_version: int, owner: str, lease_seconds: float,
              queue: str | None = None, requested_resources: dict[str, Any] | None = None,
              fence_key_hash: str | None = None) -> TaskRecord | None:
        """RUNNABLE -> RUNNING for `owner`: a new attempt with a new fencing token and a lease of
        `lease_seconds`. None if another worker (or an operator) changed the task first.
        `fence_key_hash`: the hash of the secret the attempt's job shows at the fence endpoint."""
        values: dict[str, Any] = {
            "state": S.RUNNING.value, "version": Task.version + 1, "attempt": Task.attempt + 1,
            "fencing_token": Task.fencing_token + 1, "lease_owner": owner,
            "lease_expires_at": func.now() + timedelta(seconds=lease_seconds),
            "started_at": func.now(), "finished_at": None, "error": None, "spark_app_id": None,
        }
        if queue is not None:
            values["queue"] = queue
        if requested_resources is not None:
            values["requested_resources"] = requested_resources
        task = self._cas(values, Task.id == task_id, Task.state == S.RUNNABLE.value,
                         Task.version == expected_version)
        if task is not None:
            self.session.add(TaskAttempt(task_id=task.id, attempt=task.attempt, fencing_token=task.fencing_token,
                                         worker=owner, queue=task.queue, requested_resources=task.requested_resources,
                                         fence_key_hash=fence_key_hash))
            self.session.flush()
        return task

    def claimable(self, *, limit: int = 10, services: Iterable[str] | None = None,
                  light: bool | None = None) -> list[TaskRecord]:
        """RUNNABLE tasks of enabled tables whose retry time has come, highest priority first (within one
        priority, the services claimed first: CLAIMED_FIRST), skipping rows other workers are claiming right now;
        `light` True or False: only those of LIGHT_SERVICES, or none of them."""
        stmt = (select(Task).join(RegisteredTable, RegisteredTable.id == Task.table_id)
                .where(Task.state == S.RUNNABLE.value, RegisteredTable.enabled.is_(True),
                       or_(Task.run_after.is_(None), Task.run_after <= func.now()))
                .order_by(Task.priority.desc(), _CLAIMED_FIRST_RANK, Task.id).limit(limit)
                .with_for_update(of=Task, skip_locked=True))
        if services is not None:
            stmt = stmt.where(Task.service.in_(list(services)))
        if light is not None:
            stmt = stmt.where(Task.service.in_(_LIGHT) if light else Task.service.not_in(_LIGHT))
        return tasks_of(self.session.scalars(stmt, execution_options={"populate_existing": True}))

    def claim_next(self, *, owner: str, lease_seconds: float, services: Iterable[str] | None = None,
                   queue: str | None = None) -> TaskRecord | None:
        """Claim the most urgent claimable task, if any."""
        for task in self.claimable(limit=1, services=services):
            return self.claim(task.id, expected_version=task.version, owner=owner,
                              lease_seconds=lease_seconds, queue=queue)
        return None

    def renew_lease(self, task_id: int, *, fencing_token: int, lease_seconds: float) -> bool:
        """Extend a running task's lease. False: the lease was lost (expired and taken over, or the
        task was cancelled); the worker must stop and must not complete the instant."""
        stmt = (update(Task).where(Task.id == task_id, Task.state == S.RUNNING.value,
                                   Task.fencing_token == fencing_token, Task.lease_expires_at > func.now())
                .values(lease_expires_at=func.now() + timedelta(seconds=lease_seconds))
                .returning(Task.id))
        return self.session.execute(stmt, execution_options={"synchronize_session": False}).first() is not None

    def holds_fence(self, task_id: int, fencing_token: int, *, lock: bool = False) -> bool:
        """True while `fencing_token` is the live lease of the running task: the check a job makes
        right before completing the instant. With `lock`, the row stays locked until commit, so no
        takeover can slip in between the check and the caller's own commit."""
        stmt = select(Task.id).where(Task.id == task_id, Task.state == S.RUNNING.value,
                                     Task.fencing_token == fencing_token, Task.lease_expires_at > func.now())
        if lock:
            stmt = stmt.with_for_update()
        return self.session.execute(stmt).first() is not None

    def attempt_with_fence_key(self, task_id: int, fencing_token: int,
                               fence_key_hash: str) -> AttemptRecord | None:
        """The attempt of `fencing_token` if `fence_key_hash` is its fence key's hash (constant-time compare)."""
        attempt = self.session.scalar(select(TaskAttempt).where(TaskAttempt.task_id == task_id,
                                                                TaskAttempt.fencing_token == fencing_token))
        if attempt is None or attempt.fence_key_hash is None \
                or not hmac.compare_digest(attempt.fence_key_hash, fence_key_hash):
            return None
        return AttemptRecord.of(attempt)

    def annotate_attempt(self, task_id: int, *, fencing_token: int, log_tail: str | None = None,
                         error: str | None = None, result: dict[str, Any] | None = None) -> None:
        """Attach the job's log tail and result (and an error, unless one is recorded) to an attempt that
        already ended: one whose task was cancelled or whose lease was taken over while its job ran."""
        values: dict[str, Any] = {"log_tail": log_tail, "result": result}
        if error is not None:
            values["error"] = func.coalesce(TaskAttempt.error, error)
        self._update_attempt(task_id, fencing_token, **values)

    def record_spark_app(self, task_id: int, *, fencing_token: int, spark_app_id: str) -> bool:
        stmt = (update(Task).where(Task.id == task_id, Task.state == S.RUNNING.value,
                                   Task.fencing_token == fencing_token)
                .values(spark_app_id=spark_app_id).returning(Task.id))
        if self.session.execute(stmt, execution_options={"synchronize_session": False}).first() is None:
            return False
        self._update_attempt(task_id, fencing_token, spark_app_id=spark_app_id)
        return True

    def in_states_with_tables(self, states: Collection[TaskState]) -> list[Any]:
        """(id, state, version, instant, updated_at, base_path, service) of the tasks in `states`, with their
        table's base path: what the manager's restore compares with the timelines."""
        return list(self.session.execute(
            select(Task.id, Task.state, Task.version, Task.instant, Task.updated_at, RegisteredTable.base_path,
                   Task.service)
            .join(RegisteredTable, RegisteredTable.id == Task.table_id)
            .where(Task.state.in_([s.value for s in states]))).all())

    def start_new_series(self, task_id: int) -> None:
        """Attempts from now on are a new series: earlier failures count neither against the task's retries nor
        in its memory growth (a canary's failure, once the canary is rolled back)."""
        self.session.execute(update(Task).where(Task.id == task_id).values(retry_series_start=Task.attempt,
                                                                           memory_factor=1.0),
                             execution_options={"synchronize_session": False})

    def record_engine(self, task_id: int, *, fencing_token: int, engine_kind: str) -> None:
        """Where the attempt's job runs: "warm" (its queue's warm engine) or "dedicated" (a job of its own)."""
        self._update_attempt(task_id, fencing_token, engine_kind=engine_kind)

    def finish(self, task_id: int, *, fencing_token: int, succeeded: bool, error: str | None = None,
               log_tail: str | None = None, failure: FailureRecord | None = None,
               result: dict[str, Any] | None = None) -> TaskRecord | None:
        """RUNNING -> SUCCEEDED or FAILED, only for the holder of `fencing_token`. A failure's classification
        (`failure`) says whether and when the manager retries it."""
        to = S.SUCCEEDED if succeeded else S.FAILED
        values: dict[str, Any] = {"state": to.value, "version": Task.version + 1, "error": error,
                                  "finished_at": func.now(), "lease_owner": None, "lease_expires_at": None,
                                  "next_attempt_at": None}
        if succeeded:
            values.update(failure_kind=None, retryable=None, retry_reason=None)
        elif failure is not None:
            values.update(failure_kind=failure.kind, retryable=failure.retryable, retry_reason=failure.reason,
                          memory_factor=Task.memory_factor * failure.memory_growth)
            if failure.uncounted:
                values["retry_series_start"] = Task.attempt
            if failure.retry_in_seconds is not None:
                values["next_attempt_at"] = func.now() + timedelta(seconds=failure.retry_in_seconds)
        task = self._cas(values, Task.id == task_id, Task.state == S.RUNNING.value, Task.fencing_token == fencing_token)
        if task is not None:
            self._update_attempt(task_id, fencing_token, outcome=to.value, error=error, log_tail=log_tail,
                                 result=result, finished_at=func.now())
        return task

    def expired_leases(self, limit: int = 100) -> list[TaskRecord]:
        """Running tasks whose lease expired: their worker died or hangs."""
        return tasks_of(self.session.scalars(
            select(Task).where(Task.state == S.RUNNING.value, Task.lease_expires_at <= func.now())
            .order_by(Task.lease_expires_at).limit(limit), execution_options={"populate_existing": True}))

    def requeue_expired(self, task_id: int, *, fencing_token: int) -> TaskRecord | None:
        """RUNNING -> RUNNABLE for a task whose lease (with this token) expired; its attempt is LOST.
        The next claim gets a new fencing token, so the lost worker can no longer complete it."""
        task = self._cas({"state": S.RUNNABLE.value, "version": Task.version + 1,
                          "lease_owner": None, "lease_expires_at": None},
                         Task.id == task_id, Task.state == S.RUNNING.value,
                         Task.fencing_token == fencing_token, Task.lease_expires_at <= func.now())
        if task is not None:
            self._update_attempt(task_id, fencing_token, outcome="LOST", error="lease expired",
                                 finished_at=func.now())
            notify(self.session, TASK_RUNNABLE)
        return task

    # --- the manager: retries -----------------------------------------------------------------------
    def due_retries(self, limit: int = 100) -> list[TaskRecord]:
        """FAILED tasks whose next attempt is due, locked (SKIP LOCKED) for this transaction."""
        return tasks_of(self.session.scalars(
            select(Task).where(Task.state == S.FAILED.value, Task.next_attempt_at <= func.now())
            .order_by(Task.next_attempt_at).limit(limit).with_for_update(skip_locked=True),
            execution_options={"populate_existing": True}))

    def retry(self, task: TaskRecord) -> TaskRecord | None:
        """FAILED -> RUNNABLE for a due retry (a compare-and-set on the version it was read at)."""
        return self.transition(task.id, expected_state=S.FAILED, expected_version=task.version, to=S.RUNNABLE,
                               next_attempt_at=None)

    def failed_for_good(self, limit: int = 1000) -> list[TaskRecord]:
        """FAILED tasks the manager will not retry (retries exhausted, or not retryable)."""
        return tasks_of(self.session.scalars(select(Task).where(Task.state == S.FAILED.value,
                                                                Task.next_attempt_at.is_(None))
                                             .order_by(Task.id).limit(limit)))

    def _update_attempt(self, task_id: int, fencing_token: int, **values: Any) -> None:
        self.session.execute(update(TaskAttempt).where(TaskAttempt.task_id == task_id,
                                                       TaskAttempt.fencing_token == fencing_token)
                             .values(**values), execution_options={"synchronize_session": False})

    # --- operator actions ---------------------------------------------------------------------------
    def apply(self, task_id: int, action: OperatorAction) -> TaskRecord:
        """rerun | suspend | resume | cancel, as an operator asks. IllegalTransitionError when the
        task's state does not allow it; retried if the task changes concurrently."""
        for _ in range(_CAS_RETRIES):
            task = self.get(task_id)
            current = S(task.state)
            if current not in ACTION_SOURCES[action]:
                allowed = " or ".join(sorted(ACTION_SOURCES[action]))
                raise IllegalTransitionError(
                    f"cannot {action.value} task {task_id}: it is {current}; only {allowed} tasks can be")
            changes: dict[str, Any] = {}
            if action is OperatorAction.SUSPEND:
                to = S.SUSPENDED
            elif action is OperatorAction.CANCEL:
                to = S.CANCELLED
            else:  # rerun, resume: held again if blockers remain
                to = S.BLOCKED if task.blockers else S.RUNNABLE
                changes["run_after"] = None
                if action is OperatorAction.RERUN:  # a new series of attempts
                    changes.update(error=None, finished_at=None, next_attempt_at=None, retry_reason=None)
                    self.session.execute(update(Task).where(Task.id == task_id).values(
                        retry_series_start=Task.attempt, memory_factor=1.0),
                        execution_options={"synchronize_session": False})
            if current is S.RUNNING:
                changes["error"] = "cancelled by an operator"
            updated = self.transition(task_id, expected_state=current, expected_version=task.version, to=to,
                                      **changes)
            if updated is not None:
                return updated
        raise ConflictError(f"task {task_id} keeps changing; try again")

