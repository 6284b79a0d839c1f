"""A restore in place to a savepoint as the API asks for it (`POST /api/v1/tables/{id}/restore` with `savepoint`
and `in_place`; to a new path it is a backup_restore task, service/backup_restore.py): the restore plan is
written on the table's timeline under the writers' lock, and its task recorded for a worker to run
(`jobs/run.py --action restore`). Refusals come before anything is written, each in one line."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.db import RegisteredTable, Task, TaskRepo, TaskState
from tms.execute.restore import plan_restore
from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService


def request_savepoint_restore(session: Session, row: RegisteredTable, savepoint: str, *, force: bool = False
                              ) -> Task:
    """Plan the restore in place of the registered table `row` to its savepoint `savepoint` and record its task.
    `force`: roll back the writers' pending instants too (otherwise they refuse the restore)."""
    table = HudiTable.load(row.base_path)
    with TransactionManager.from_options(table, row.concurrency_options) as transactions:
        restore = plan_restore(table, savepoint, roll_back_pending_writes=force, transactions=transactions)
    task, _ = TaskRepo(session).create(
        table_id=row.id, service=TableService.RESTORE.value, instant=restore.timestamp, state=TaskState.RUNNABLE,
        target_instant=savepoint, planned_by_tms=True,
        plan_stats={"operations": 1, "largest_file_group_bytes": 0, "operation_bytes": []})
    return task
