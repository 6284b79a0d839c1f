"""Taking a backup version: the previous version's files plus what changed since, copied to the backup root.

The version's files are the table's snapshot (snapshot.py); a file the previous version holds at the same
path and size is named, not copied. The copy streams each file through the storage abstraction, so a local
table backs up to S3 and back. After the copy the timeline is read again: a clean (or restore) started
since the snapshot may have deleted a file the version needs, before it was listed, so the attempt fails
(BackupInconsistentError; its retry takes a new snapshot), as it does when a listed file vanished. The manifest is
written last."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import HudiTable

from .errors import BackupError, BackupInconsistentError
from .layout import BackupStore, Manifest, StoredFile, manifest_path, object_path
from .snapshot import deletions_since, take_snapshot

CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class BackupResult:
    manifest: Manifest
    seconds: float

    def record(self) -> dict:
        m = self.manifest
        return {"action": "backup", "version": m.version, "instant": m.instant, "files": len(m.files),
                "files_copied": m.files_copied, "bytes_copied": m.bytes_copied, "total_bytes": m.total_bytes,
                "seconds": round(self.seconds, 3)}

    def summary(self) -> str:
        m = self.manifest
        return (f"backup version {m.version} of {m.source} at {m.instant}: {len(m.files)} file(s), "
                f"{m.files_copied} copied ({m.bytes_copied / 1e6:.1f} MB of {m.total_bytes / 1e6:.1f} MB) "
                f"in {self.seconds:.1f} s")


def copy_file(source: Storage, rel: str, size: int, target: Storage, target_rel: str) -> None:
    """Copy the first `size` bytes of `rel` (a log file may have grown since it was listed), replacing what
    an earlier failed attempt left at `target_rel`."""
    target.delete(target_rel)
    try:
        with source.open(rel, "rb") as src, target.open_new(target_rel) as dst:
            left = size
            while left > 0:
                chunk = src.read(min(CHUNK, left))
                if not chunk:
                    raise BackupInconsistentError(f"{rel} is shorter than the {size} bytes listed")
                dst.write(chunk)
                left -= len(chunk)
    except FileNotFoundError:
        raise BackupInconsistentError(f"{rel} was deleted while the backup copied it (a clean ran?); "
                                      "the retry takes a new snapshot") from None


def take_backup(table: HudiTable, store: BackupStore, *, version: int | None = None,
                check: Callable[[], None] = lambda: None, now: datetime | None = None) -> BackupResult:
    """Write backup `version` (default: the next one) of `table` to `store`. `check` is called before the
    manifest is written (the task's fence: a lost lease writes no manifest)."""
    started = time.monotonic()
    previous = store.latest()
    version = version if version is not None else (previous.version + 1 if previous else 1)
    if previous is not None and version <= previous.version:
        raise BackupError(f"backup version {version} exists already under {store.root}")
    if store.storage.exists(manifest_path(version)):
        raise BackupError(f"backup version {version} exists already under {store.root}")
    snapshot = take_snapshot(table)
    if previous is not None and snapshot.instant < previous.instant:
        raise BackupError(f"table {table.name} is at {snapshot.instant}, before backup version "
                          f"{previous.version} ({previous.instant}): restored since? back it up to a new destination")
    kept = previous.files if previous else {}
    files: dict[str, StoredFile] = {}
    copied = copied_bytes = 0
    for rel, size in sorted(snapshot.files.items()):
        known = kept.get(rel)
        if known is not None and known.size == size:
            files[rel] = known
            continue
        target = object_path(version, rel)
        copy_file(table.storage, rel, size, store.storage, target)
        files[rel] = StoredFile(target, size)
        copied += 1
        copied_bytes += size
    manifest = Manifest(version=version, instant=snapshot.instant, source=table.base_path,
                        table_version=table.config.version, created_at=(now or datetime.now(UTC)).isoformat(),
                        files=files, files_copied=copied, bytes_copied=copied_bytes)
    deletions = deletions_since(table, snapshot)
    if deletions:
        raise BackupInconsistentError(f"{', '.join(deletions)} started while the backup copied {table.name}; "
                                      "the retry takes a new snapshot")
    check()
    store.storage.write_atomic(manifest_path(version), manifest.to_json())
    return BackupResult(manifest, time.monotonic() - started)
