"""Restores: in place to a savepoint (`POST /api/v1/tables/{id}/restore` with `savepoint` and `in_place`) and to
a new base path (a backup version or a savepoint, as a backup_restore task). In place, the restore plan is
written on the table's timeline under the writers' lock and its task recorded for a worker to run
(`jobs/run.py --action restore`). Refusals come before anything is written, each in one line."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.backup.errors import BackupError
from tms.backup.requests import request_restore, request_savepoint_copy
from tms.config import Settings
from tms.db import TableRepo, TaskRecord, TaskRepo, TaskState
from tms.execute.restore import plan_restore
from tms.hudi.context import HudiContext
from tms.hudi.locks import TransactionManager
from tms.hudi.storage.paths import is_under_roots
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService
from tms.task_payload import ONE_OPERATION

from ..errors import validation_error
from ..schemas.restore import RestoreRequest


def restore_in_place(session: Session, table_id: int, savepoint: str, *, force: bool = False,
                     context: HudiContext) -> TaskRecord:
    """Plan the restore in place of the registered table to its savepoint `savepoint` and record its task.
    `force`: roll back the writers' pending instants too (otherwise they refuse the restore)."""
    row = TableRepo(session).get(table_id)
    table = HudiTable.load(row.base_path, context=context)
    with TransactionManager.from_options(table, row.concurrency_options) as transactions:
        restore = plan_restore(table, savepoint, roll_back_pending_writes=force, transactions=transactions)
    task, _ = TaskRepo(session).create(
        table_id=row.id, service=TableService.RESTORE.value, instant=restore.timestamp, state=TaskState.RUNNABLE,
        target_instant=savepoint, planned_by_tms=True, payload=ONE_OPERATION)
    return task


def restore_to_new_path(session: Session, settings: Settings, table_id: int, restore: RestoreRequest, *,
                        context: HudiContext) -> TaskRecord:
    """Record the backup_restore task of `restore` (a backup version or a savepoint, to a new path)."""
    if restore.in_place or restore.target_path is None:
        raise BackupError("give target_path: a restore to a new base path")
    roots = settings.storage_roots
    if not is_under_roots(restore.target_path, roots):
        raise validation_error([{"loc": ("target_path",), "type": "value_error",
                                 "msg": f"{restore.target_path} is outside the storage roots ({', '.join(roots)})"}],
                               "body")
    if restore.savepoint is not None:
        return request_savepoint_copy(session, table_id, restore.savepoint, restore.target_path, context=context)
    assert restore.version is not None  # the request has exactly one of version and savepoint
    return request_restore(session, table_id, restore.version, restore.target_path, catch_up=restore.catch_up,
                           context=context)


def restore(session: Session, settings: Settings, table_id: int, command: RestoreRequest, *,
            context: HudiContext) -> TaskRecord:
    """The restore `command` asks for: in place to a savepoint, or to a new base path."""
    if not command.in_place:
        return restore_to_new_path(session, settings, table_id, command, context=context)
    if command.savepoint is None:
        raise BackupError("a backup version is restored to a new base path: give target_path (in place is not "
                          "available for backup versions in this build)")
    return restore_in_place(session, table_id, command.savepoint, force=command.force, context=context)
