"""Which executor runs a pending instant (the registry's entry of its action: tms.table_services), and running
one end to end: start on the driver, the tasks on a runner, completion on the driver."""
from __future__ import annotations

from tms.hudi.errors import HudiError, InstantConflictError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.conflicts import WriteConflictError
from tms.hudi.timeline.instant import Action
from tms.table_services import BY_ACTION

from .abandon import abandon_attempt
from .action import ActionExecutor, ExecutionResult
from .clustering import ClusteringExecutor
from .compaction import CompactionExecutor
from .fencing import Fence, no_fence
from .rollback import keeps_plan
from .runner import Runner

# The executors that map a plan's operations on a runner, by the timeline action of the plan.
EXECUTORS: dict[str, type[ActionExecutor]] = {a: e.action_executor for a, e in BY_ACTION.items()
                                              if e.action_executor is not None}


def executor_for(table: HudiTable, timestamp: str, transactions: TransactionManager | None = None) -> ActionExecutor:
    """The executor of the pending plan at `timestamp`, completing it under `transactions` (the table's lock)."""
    table.timeline.reload()
    instant = table.timeline.get(timestamp)
    if instant is None:
        raise HudiError(f"no instant {timestamp} on the timeline of table {table.name}")
    if instant.is_completed:
        raise InstantConflictError(f"{instant.action} {timestamp} is already completed")
    action = instant.action
    if action == Action.REPLACE_COMMIT and keeps_plan(table, timestamp, action):
        action = Action.CLUSTERING  # v6 names pending clustering `replacecommit`
    executor = EXECUTORS.get(action)
    if executor is None:
        raise HudiError(f"instant {timestamp} is a {instant.action} ({instant.state.name.lower()}), "
                        f"not a plan TMS executes ({', '.join(EXECUTORS)})")
    return executor(table, instant, transactions)


def execute_instant(table: HudiTable, timestamp: str, runner: Runner, fence: Fence = no_fence,
                    service: str | None = None, transactions: TransactionManager | None = None,
                    budget_bytes: int | None = None) -> ExecutionResult:
    """Run the pending plan at `timestamp`; with `service`, refuse a plan of another table service. An attempt refused
    at its commit by a conflicting write is rolled back with its plan, and WriteConflictError is raised. A
    restore (to a savepoint, in place) runs its rollbacks one after the other (tms.execute.restore).
    `budget_bytes`: the memory budget of each merge (default: the table's, else TMS's default)."""
    table.timeline.reload()
    pending = table.timeline.get(timestamp)
    entry = BY_ACTION.get(pending.action) if pending is not None else None
    if entry is not None and entry.instant_runner is not None:  # a restore, an index build: run whole
        if service is not None and service != entry.service:
            raise HudiError(f"instant {timestamp} is {_a(entry.service)} plan, not {service}")
        return entry.instant_runner(table, timestamp, runner, fence, transactions)
    executor = executor_for(table, timestamp, transactions)
    if budget_bytes is not None and isinstance(executor, CompactionExecutor | ClusteringExecutor):
        executor.budget_bytes = budget_bytes
    if service is not None and executor.service != service:
        raise HudiError(f"instant {timestamp} is a {executor.service} plan, not {service}")
    tasks = executor.start(fence)
    results = runner.map(executor.task_function, tasks, f"{executor.service} {timestamp} of {table.name}",
                         executor.task_bytes(tasks))
    try:
        return executor.finish(results, fence)
    except WriteConflictError:
        abandon_attempt(table, timestamp, executor.transactions, fence)
        raise


def _a(service: str) -> str:
    return f"{'an' if service[0] in 'aeiou' else 'a'} {service}"
