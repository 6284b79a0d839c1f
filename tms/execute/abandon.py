"""Giving way to a writer: the attempt of a clustering (or any plan that rewrites file groups) whose commit
found a conflicting write is rolled back, and its plan leaves the timeline, so that the next plan takes the
writer's data. Nothing is ever completed over the write."""
from __future__ import annotations

from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import InstantInfo, RollbackPlan, serialize_rollback_plan

from .action import ExecutionResult
from .attempt_files import attempt_rollback_requests
from .fencing import Fence, no_fence
from .rollback import RollbackExecutor
from .runner import LocalRunner


def abandon_attempt(table: HudiTable, timestamp: str, transactions: TransactionManager,
                    fence: Fence = no_fence) -> ExecutionResult:
    """Roll back the inflight attempt of the plan at `timestamp` (its files deleted through a rollback
    instant, planned and completed under the lock), then remove the plan."""
    tl = table.timeline
    tl.reload(force=True)
    requested = tl.states_of(timestamp)[State.REQUESTED]
    plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=timestamp, action=requested.action),
                        rollback_requests=attempt_rollback_requests(table, timestamp))
    with transactions.transaction():
        fence()
        rollback = tl.create_requested(Action.ROLLBACK, serialize_rollback_plan(plan))
    executor = RollbackExecutor(table, rollback, transactions)
    tasks = executor.start(fence)
    result = executor.finish(LocalRunner(1).map(executor.task_function, tasks, f"rollback of {timestamp}"), fence)
    with transactions.transaction():
        fence()
        if tl.states_of(timestamp):
            tl.delete_pending(timestamp)
    return result
