"""One backup task's work, as its job runs it: a backup, a backup-clean or a restore of a version. The task's
plan (recorded when it was requested) names the backup root and what else it needs; the fence is checked
before anything a lost lease must not write (a manifest, a deletion, a restored table's properties)."""
from __future__ import annotations

from typing import Any

from tms.execute.fencing import Fence
from tms.execute.restore_copy import restore_copy
from tms.execute.runner import LocalRunner
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService
from tms.task_payload import BackupRequest

from .errors import BackupError
from .expire import expire_versions
from .layout import BackupStore
from .restore import restore_version
from .take import take_backup


def run_backup_task(service: str, base_path: str, plan: BackupRequest, fence: Fence,
                    context: HudiContext = DEFAULT_CONTEXT) -> tuple[dict[str, Any], str]:
    """Run it, reaching the table and the backup root with `context`; (the result record, a one-line summary).
    BackupError when it cannot be done exactly. A restore of a savepoint (its plan names one) copies the table as
    of the savepoint to a new path (restore_copy)."""
    if service == TableService.BACKUP_RESTORE and plan.savepoint:
        fence()
        copied = restore_copy(HudiTable.load(base_path, context=context), plan.savepoint,
                              _target_path(plan), LocalRunner(), check=fence)
        return copied.record(), copied.summary()
    root = plan.root
    if not root:
        raise BackupError(f"the {service} task's plan names no backup root")
    store = BackupStore(root, context.open_storage(root.rstrip("/")))
    if service == TableService.BACKUP:
        backup = take_backup(HudiTable.load(base_path, context=context), store, check=fence)
        return backup.record(), backup.summary()
    if service == TableService.BACKUP_CLEAN:
        fence()
        expiry = expire_versions(store, plan.keep_versions or 0)
        return expiry.record(), expiry.summary()
    if service == TableService.BACKUP_RESTORE:
        fence()
        if plan.version is None:
            raise BackupError("the backup_restore task's plan names no backup version")
        source = HudiTable.load(base_path, context=context) if plan.catch_up else None
        restored = restore_version(store, plan.version, _target_path(plan), check=fence,
                                   catch_up=source, context=context)
        return restored.record(), restored.summary()
    raise BackupError(f"{service} is not a backup task")


def _target_path(plan: BackupRequest) -> str:
    if not plan.target_path:
        raise BackupError("the backup_restore task's plan names no target path")
    return plan.target_path
