"""The plans an executor runs whole rather than as operations mapped on a runner: a restore in place (its
rollbacks one after the other: tms.execute.restore) and an index build (tms.hudi.metadata.indexer)."""
from __future__ import annotations

from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.indexer import run_index
from tms.hudi.metadata.init import FILE_GROUPS
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, State
from tms.table_service import TableService

from .action import ExecutionResult
from .fencing import Fence
from .restore import run_restore
from .runner import Runner


def restore_instant(table: HudiTable, timestamp: str, runner: Runner, fence: Fence,
                    transactions: TransactionManager | None) -> ExecutionResult:
    restored = run_restore(table, timestamp, runner, fence, transactions)
    return ExecutionResult(restored.instant, Action.RESTORE, len(restored.rolled_back),
                           files_deleted=restored.files_deleted)


def index_instant(table: HudiTable, timestamp: str, runner: Runner, fence: Fence,
                  transactions: TransactionManager | None) -> ExecutionResult:
    built = run_index(table, timestamp, transactions, fence)
    table.timeline.reload(force=True)
    done = table.timeline.states_of(timestamp)[State.COMPLETED]
    return ExecutionResult(done, TableService.INDEXING, 1, files_written=FILE_GROUPS[built.partition])
