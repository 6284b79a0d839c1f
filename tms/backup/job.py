"""One backup task's work, as its job runs it: a backup, a backup-clean or a restore of a version. The task's
plan (recorded when it was requested) names the backup root and what else it needs; the fence is checked
before anything a lost lease must not write (a manifest, a deletion, a restored table's properties)."""
from __future__ import annotations

from typing import Any

from tms.execute.fencing import Fence
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService

from .errors import BackupError
from .expire import expire_versions
from .layout import BackupStore
from .restore import restore_version
from .take import take_backup


def run_backup_task(action: str, base_path: str, plan: dict[str, Any], fence: Fence) -> tuple[dict[str, Any], str]:
    """Run it; (the result record, a one-line summary). BackupError when it cannot be done exactly."""
    root = plan.get("root")
    if not root:
        raise BackupError(f"the {action} task's plan names no backup root")
    store = BackupStore(root)
    if action == TableService.BACKUP:
        backup = take_backup(HudiTable.load(base_path), store, check=fence)
        return backup.record(), backup.summary()
    if action == TableService.BACKUP_CLEAN:
        fence()
        expiry = expire_versions(store, int(plan.get("keep_versions") or 0))
        return expiry.record(), expiry.summary()
    if action == TableService.BACKUP_RESTORE:
        fence()
        restored = restore_version(store, int(plan["version"]), str(plan["target_path"]), check=fence)
        return restored.record(), restored.summary()
    raise BackupError(f"{action} is not a backup task")
