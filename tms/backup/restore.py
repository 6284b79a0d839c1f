"""Restoring a backup version: materialise its manifest as a Hudi table at a new base path.

Every file the version names is copied to its own path under the target; `hoodie.properties` is written
without the metadata table's partitions (the backup holds no metadata table), so readers list the files and
the table's next writer builds its metadata table afresh. A target that already holds anything is refused
before anything is written; so is one
that holds anything but what an earlier attempt of the same restore copied (its retry goes on).

With catch-up, the restored table then reads as the source table does now: the source's snapshot (the files
of its instants completed since the version, and its timeline, as an incremental backup takes them) is
materialised, each file the version holds at the same path and size copied from the backup, the others from
the source; the files the version holds that the source no longer does (cleaned since) are left out."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.metadata.reader import PARTITIONS_INFLIGHT_PROP, PARTITIONS_PROP
from tms.hudi.storage.table_storage import Storage, walk_files
from tms.hudi.table.hudi_table import PROPERTIES, HudiTable
from tms.hudi.table.properties import format_properties, parse_properties

from .errors import BackupError, BackupInconsistentError
from .layout import BackupStore, Manifest
from .snapshot import deletions_since, take_snapshot
from .take import copy_file

# The metadata table's partitions (tms.hudi.metadata.reader's names, not imported: it loads polars, seconds
# of a job's start).


@dataclass(frozen=True)
class RestoreResult:
    version: int
    instant: str
    target_path: str
    files: int
    bytes_copied: int
    seconds: float
    caught_up_to: str | None = None   # catch-up: the source's last completed instant the copy reads as
    files_from_source: int = 0        # catch-up: the files copied from the source, not the backup

    def record(self) -> dict:
        return {"action": "restore", "version": self.version, "instant": self.instant,
                "target_path": self.target_path, "files": self.files, "bytes_copied": self.bytes_copied,
                "caught_up_to": self.caught_up_to, "files_from_source": self.files_from_source,
                "seconds": round(self.seconds, 3)}

    def summary(self) -> str:
        caught = (f", caught up to {self.caught_up_to} ({self.files_from_source} file(s) from the source)"
                  if self.caught_up_to else "")
        return (f"restored backup version {self.version} ({self.instant}) to {self.target_path}{caught}: "
                f"{self.files} file(s), {self.bytes_copied / 1e6:.1f} MB in {self.seconds:.1f} s")


def require_empty_target(target: Storage, resumable: Manifest | set[str] | None = None) -> None:
    """Refuse a target that holds anything; with `resumable` (a version, or the paths a restore copies), one
    that holds nothing but those files without `hoodie.properties` (what an earlier attempt of the same
    restore left) is accepted."""
    if target.exists(PROPERTIES):
        raise BackupError(f"restore target {target.base_uri} is not empty: it holds a table; restore to a new path")
    if resumable is None:
        if target.listdir(""):
            raise BackupError(f"restore target {target.base_uri} is not empty; restore to a new path")
        return
    allowed = resumable.files if isinstance(resumable, Manifest) else resumable
    strangers = [info.path for info in walk_files(target) if info.path not in allowed]
    if strangers:
        raise BackupError(f"restore target {target.base_uri} is not empty ({strangers[0]}, ...); "
                          "restore to a new path")


def restore_version(store: BackupStore, version: int, target_path: str,
                    check: Callable[[], None] = lambda: None, catch_up: HudiTable | None = None,
                    context: HudiContext = DEFAULT_CONTEXT) -> RestoreResult:
    """Materialise backup `version` at `target_path` (empty, absent, or left so by an earlier attempt of this
    restore). `check` is called before `hoodie.properties` is written (the task's fence). `catch_up`: the
    backed-up table, whose instants completed since the version the copy takes too (see the module docstring)."""
    started = time.monotonic()
    manifest: Manifest = store.manifest(version)
    target = context.open_storage(target_path)
    if target_path.rstrip("/") == manifest.source.rstrip("/"):
        raise BackupError(f"restore target {target_path} is the backed-up table itself; restore to a new path")
    # Each file to copy: (where its bytes are, the path there, its size).
    plan: dict[str, tuple[Storage, str, int]] = {rel: (store.storage, f.object, f.size)
                                                 for rel, f in manifest.files.items()}
    snapshot = None
    if catch_up is not None:
        if catch_up.base_path.rstrip("/") != manifest.source.rstrip("/"):
            raise BackupError(f"backup version {version} is of {manifest.source}, not of {catch_up.base_path}")
        snapshot = take_snapshot(catch_up)
        if snapshot.instant < manifest.instant:
            raise BackupError(f"table {catch_up.name} is at {snapshot.instant}, before backup version {version} "
                              f"({manifest.instant}): restored since? there is nothing to catch up from")
        plan = {rel: (plan[rel] if rel in plan and plan[rel][2] == size else (catch_up.storage, rel, size))
                for rel, size in snapshot.files.items()}
    require_empty_target(target, resumable=set(plan))
    copied = 0
    for rel, (source, stored, size) in sorted(plan.items()):
        if rel == PROPERTIES:
            continue
        copy_file(source, stored, size, target, rel)
        copied += size
    if catch_up is not None and snapshot is not None:
        deletions = deletions_since(catch_up, snapshot)
        if deletions:
            raise BackupInconsistentError(f"{', '.join(deletions)} started while the restore copied "
                                          f"{catch_up.name}; the retry takes a new snapshot")
    source, stored, _ = plan[PROPERTIES]
    props = parse_properties(source.read_bytes(stored).decode())
    for key in (PARTITIONS_PROP, PARTITIONS_INFLIGHT_PROP):
        props.pop(key, None)
    caught = f", caught up to {snapshot.instant} of {manifest.source}" if snapshot else ""
    data = format_properties(props, f"restored from backup version {version} of {manifest.source}{caught}").encode()
    check()
    target.write_atomic(PROPERTIES, data)  # last: the table exists once its files do
    from_source = sum(1 for s, _, _ in plan.values() if s is not store.storage)
    return RestoreResult(version, manifest.instant, target_path, len(plan), copied + len(data),
                         time.monotonic() - started, snapshot.instant if snapshot else None, from_source)
