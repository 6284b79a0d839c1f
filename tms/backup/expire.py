"""Backup-clean: delete the versions beyond the kept count, and the objects only they name.

Manifests of expired versions go first (a version is gone as soon as its manifest is), then every object an
expired manifest names and no kept manifest does: a kept version never loses a file. Objects are never
shared by name alone: each is named by the version that first copied it, and kept versions name it
explicitly. Backup-clean runs only while no backup of the table does (one backup task at a time per table)."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import BackupError
from .layout import BackupStore, manifest_path


@dataclass(frozen=True)
class ExpiryResult:
    expired: tuple[int, ...]
    kept: tuple[int, ...]
    objects_deleted: int
    bytes_deleted: int

    def record(self) -> dict:
        return {"action": "backup_clean", "expired": list(self.expired), "kept": list(self.kept),
                "files_deleted": self.objects_deleted, "bytes_deleted": self.bytes_deleted}

    def summary(self) -> str:
        return (f"backup-clean: expired version(s) {list(self.expired) or 'none'}, kept {list(self.kept)}; "
                f"{self.objects_deleted} file(s) deleted ({self.bytes_deleted / 1e6:.1f} MB)")


def expire_versions(store: BackupStore, keep_versions: int) -> ExpiryResult:
    if keep_versions < 1:
        raise BackupError(f"keep_versions must be at least 1, not {keep_versions}")
    manifests = store.manifests()
    kept, expired = manifests[-keep_versions:], manifests[:-keep_versions]
    needed = {f.object for m in kept for f in m.files.values()}
    doomed = {f.object: f.size for m in expired for f in m.files.values() if f.object not in needed}
    for m in expired:
        store.storage.delete(manifest_path(m.version))
    deleted = 0
    for obj in sorted(doomed):
        if store.storage.delete(obj):
            deleted += 1
    return ExpiryResult(tuple(m.version for m in expired), tuple(m.version for m in kept), deleted,
                        sum(doomed.values()))
