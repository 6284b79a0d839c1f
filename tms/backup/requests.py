"""Requesting a table's backup tasks (the API, the ops CLI and the manager's schedule all come here): the
plan each records, checked before the task exists, so that a request TMS cannot carry out is refused with one
line and nothing is recorded."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from tms.db import BackupTaskRepo, TablePolicy, TableRecord, TableRepo, TaskRecord
from tms.hudi.context import HudiContext
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import read_savepoint
from tms.table_service import TableService
from tms.task_payload import BackupRequest

from .errors import BackupError
from .layout import BackupStore, backup_root
from .restore import require_empty_target


def backup_policy(table: TableRecord) -> TablePolicy:
    """The table's policy; BackupError if it names no backup destination."""
    policy = table.policy
    if not policy.backup_destination:
        raise BackupError(f"table {table.name} has no backup policy (PUT /api/v1/tables/{table.id}/backup)")
    return policy


def store_of(table: TableRecord, context: HudiContext) -> BackupStore:
    """The table's backups, their root reached with `context`."""
    root = backup_root(backup_policy(table).backup_destination, table.name, table.id)
    return BackupStore(root, context.open_storage(root.rstrip("/")))


def _plan(table: TableRecord, **restore: Any) -> BackupRequest:
    """The request of a backup task of the table: its backups' root and how many versions it keeps (a restore:
    which version, to where)."""
    policy = backup_policy(table)
    return BackupRequest(root=backup_root(policy.backup_destination, table.name, table.id),
                         keep_versions=policy.backup_keep_versions, **restore)


def request_backup_task(session: Session, table_id: int, service: TableService,
                        now: datetime | None = None) -> TaskRecord:
    """A backup or backup-clean of the table, now (ConflictError while another backup task is in progress);
    `now`: the requester's clock (the schedule's), by default the database's."""
    table = TableRepo(session).get(table_id)
    return BackupTaskRepo(session).request(table_id, service, _plan(table), priority=table.priority,
                                           queue=table.queue, now=now)


def request_restore(session: Session, table_id: int, version: int, target_path: str, catch_up: bool = False, *,
                    context: HudiContext) -> TaskRecord:
    """A restore of backup `version` to `target_path`: the version must exist and the target be empty now (the
    job checks the target again before it writes). `catch_up`: then apply the table's instants completed since
    the version (tms.backup.restore)."""
    table = TableRepo(session).get(table_id)
    store = store_of(table, context)
    if version not in store.versions():
        raise BackupError(f"table {table.name} has no backup version {version} (kept: {store.versions() or 'none'})")
    if target_path.rstrip("/") == table.base_path.rstrip("/"):
        raise BackupError(f"restore target {target_path} is the table itself; restore a version to a new path")
    require_empty_target(context.open_storage(target_path))  # the job's own check, made early too
    return BackupTaskRepo(session).request(table_id, TableService.BACKUP_RESTORE,
                                           _plan(table, version=version, target_path=target_path,
                                                 catch_up=catch_up),
                                           priority=table.priority, queue=table.queue)


def request_savepoint_copy(session: Session, table_id: int, savepoint: str, target_path: str, *,
                           context: HudiContext) -> TaskRecord:
    """A restore of the table's savepoint `savepoint` to `target_path` (tms.execute.restore_copy), run as a
    backup_restore task (the table's backups' one task at a time; restore_done): the savepoint must exist and
    the target be empty now (the job checks again before it writes)."""
    table = TableRepo(session).get(table_id)
    if target_path.rstrip("/") == table.base_path.rstrip("/"):
        raise BackupError(f"restore target {target_path} is the table itself; restore in place with in_place")
    read_savepoint(HudiTable.load(table.base_path, context=context), savepoint)  # SavepointError: none at that instant
    require_empty_target(context.open_storage(target_path))
    return BackupTaskRepo(session).request(table_id, TableService.BACKUP_RESTORE,
                                           BackupRequest(savepoint=savepoint, target_path=target_path),
                                           priority=table.priority, queue=table.queue)
