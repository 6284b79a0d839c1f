"""The task state machine: every state a task can be in and every legal move between them.

Repositories refuse any other move, and make each one a compare-and-set on (state, version), so
two processes can never both win the same transition."""
from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    PENDING = "PENDING"      # recorded; its plan is not yet confirmed on the timeline (planner at work)
    BLOCKED = "BLOCKED"      # plan on the timeline, held until its blockers (late writes) resolve
    RUNNABLE = "RUNNABLE"    # may be claimed by a worker (once `run_after` has passed)
    RUNNING = "RUNNING"      # claimed: lease owner, lease expiry and fencing token are set
    SUCCEEDED = "SUCCEEDED"  # the instant completed
    FAILED = "FAILED"        # the last attempt failed; the manager retries it at `next_attempt_at` if set
    SUSPENDED = "SUSPENDED"  # held by an operator
    CANCELLED = "CANCELLED"  # abandoned by an operator


S = TaskState

TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    S.PENDING: frozenset({S.BLOCKED, S.RUNNABLE, S.FAILED, S.CANCELLED}),
    # -> SUCCEEDED outside RUNNING: the manager's restore found the instant completed on the timeline
    # (by an earlier attempt that could not record it, or by another process).
    S.BLOCKED: frozenset({S.RUNNABLE, S.FAILED, S.SUSPENDED, S.CANCELLED, S.SUCCEEDED}),
    S.RUNNABLE: frozenset({S.RUNNING, S.BLOCKED, S.FAILED, S.SUSPENDED, S.CANCELLED, S.SUCCEEDED}),
    # RUNNING -> RUNNABLE: a lease that expired (dead worker) is handed back for another attempt.
    S.RUNNING: frozenset({S.SUCCEEDED, S.FAILED, S.RUNNABLE, S.CANCELLED}),
    S.FAILED: frozenset({S.RUNNABLE, S.BLOCKED, S.SUSPENDED, S.CANCELLED, S.SUCCEEDED}),
    S.SUSPENDED: frozenset({S.RUNNABLE, S.BLOCKED, S.CANCELLED, S.SUCCEEDED}),
    S.CANCELLED: frozenset({S.RUNNABLE, S.BLOCKED, S.SUCCEEDED}),
    S.SUCCEEDED: frozenset(),
}

def can_transition(current: TaskState, target: TaskState) -> bool:
    return target in TRANSITIONS[current]


class OperatorAction(StrEnum):
    RERUN = "rerun"
    SUSPEND = "suspend"
    RESUME = "resume"
    CANCEL = "cancel"


# The states each operator action starts from; the target is decided by the repository
# (rerun and resume land in BLOCKED while blockers remain, else RUNNABLE).
ACTION_SOURCES: dict[OperatorAction, frozenset[TaskState]] = {
    OperatorAction.RERUN: frozenset({S.FAILED, S.CANCELLED}),
    OperatorAction.SUSPEND: frozenset({S.BLOCKED, S.RUNNABLE, S.FAILED}),
    OperatorAction.RESUME: frozenset({S.SUSPENDED}),
    OperatorAction.CANCEL: frozenset({S.PENDING, S.BLOCKED, S.RUNNABLE, S.RUNNING, S.FAILED, S.SUSPENDED}),
}
