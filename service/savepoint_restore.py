"""A restore to a savepoint as the API asks for it (`POST /api/v1/tables/{id}/restore` with `savepoint`): the
restore plan is written on the table's timeline under the writers' lock, and its task recorded for a worker
to run (`jobs/run.py --action restore`). Refusals come before anything is written, each in one line."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.db import RegisteredTable, Task, TaskRepo, TaskState
from tms.execute.restore import RestoreRefused, plan_restore
from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService


def request_savepoint_restore(session: Session, row: RegisteredTable, savepoint: str, *, in_place: bool,
                              target_path: str | None, force: bool = False) -> Task:
    """Plan the restore of the registered table `row` to its savepoint `savepoint` and record its task.
    `force`: roll back the writers' pending instants too (otherwise they refuse the restore)."""
    if not in_place:
        # The copy to a new base path has no instant on the table's timeline for a task to track: the
        # reconciliation of tasks with timelines would cancel it. It runs with `tms restore-copy`.
        raise RestoreRefused(f"a restore of savepoint {savepoint} to a new path ({target_path}) does not run as "
                             "a task in this build: run `tms restore-copy` on a machine that reaches both paths")
    table = HudiTable.load(row.base_path)
    with TransactionManager.from_options(table, row.concurrency_options) as transactions:
        restore = plan_restore(table, savepoint, roll_back_pending_writes=force, transactions=transactions)
    task, _ = TaskRepo(session).create(
        table_id=row.id, action=TableService.RESTORE.value, instant=restore.timestamp, state=TaskState.RUNNABLE,
        target_instant=savepoint, planned_by_tms=True,
        plan_stats={"operations": 1, "largest_file_group_bytes": 0, "operation_bytes": []})
    return task
