"""Which executor runs a pending instant, and running one end to end: start on the driver, the tasks on a
runner, completion on the driver."""
from __future__ import annotations

from tms.hudi.errors import HudiError, InstantConflictError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.indexer import run_index
from tms.hudi.metadata.init import FILE_GROUPS
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.conflicts import WriteConflictError
from tms.hudi.timeline.instant import Action, State
from tms.table_service import TableService

from .abandon import abandon_attempt
from .action import ActionExecutor, ExecutionResult
from .clean import CleanExecutor
from .clustering import ClusteringExecutor
from .compaction import CompactionExecutor
from .fencing import Fence, no_fence
from .restore import run_restore
from .rollback import RollbackExecutor, keeps_plan
from .runner import Runner

EXECUTORS: dict[str, type[ActionExecutor]] = {Action.COMPACTION: CompactionExecutor,
                                               Action.CLUSTERING: ClusteringExecutor,
                                              Action.CLEAN: CleanExecutor, Action.ROLLBACK: RollbackExecutor}


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
    if pending is not None and pending.action == Action.RESTORE:
        if service is not None and service != TableService.RESTORE:
            raise HudiError(f"instant {timestamp} is a restore plan, not {service}")
        restored = run_restore(table, timestamp, runner, fence, transactions)
        return ExecutionResult(restored.instant, Action.RESTORE, len(restored.rolled_back),
                               files_deleted=restored.files_deleted)
    if pending is not None and pending.action == Action.INDEXING:
        if service is not None and service != TableService.INDEXING:
            raise HudiError(f"instant {timestamp} is an indexing plan, not {service}")
        built = run_index(table, timestamp, transactions, fence)
        table.timeline.reload(force=True)
        done = table.timeline.states_of(timestamp)[State.COMPLETED]
        return ExecutionResult(done, TableService.INDEXING, 1, files_written=FILE_GROUPS[built.partition])
    executor = executor_for(table, timestamp, transactions)
    if budget_bytes is not None and isinstance(executor, CompactionExecutor | ClusteringExecutor):
        executor.budget_bytes = budget_bytes
    if service is not None and executor.service != service:
        raise HudiError(f"instant {timestamp} is a {executor.service} plan, not {service}")
    tasks = executor.start(fence)
    results = runner.map(executor.task_function, tasks, f"{executor.service} {timestamp} of {table.name}")
    try:
        return executor.finish(results, fence)
    except WriteConflictError:
        abandon_attempt(table, timestamp, executor.transactions, fence)
        raise
