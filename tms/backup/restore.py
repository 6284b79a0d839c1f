"""Restoring a backup version: materialise its manifest as a Hudi table at a new base path.

Every file the version names is copied to its own path under the target; `hoodie.properties` is written
without the metadata table's partitions (the backup holds no metadata table), so readers list the files and
the table's next writer builds its metadata table afresh. A target that already holds anything is refused
before anything is written; so is one
that holds anything but what an earlier attempt of the same restore copied (its retry goes on)."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tms.hudi.storage.table_storage import Storage, open_storage
from tms.hudi.table.hudi_table import PROPERTIES
from tms.hudi.table.properties import format_properties, parse_properties

from .errors import BackupError
from .layout import BackupStore, Manifest
from .snapshot import walk_files
from .take import copy_file

# The metadata table's partitions (tms.hudi.metadata.reader's names, not imported: it loads polars, seconds
# of a job's start).
PARTITIONS_PROP = "hoodie.table.metadata.partitions"
PARTITIONS_INFLIGHT_PROP = "hoodie.table.metadata.partitions.inflight"


@dataclass(frozen=True)
class RestoreResult:
    version: int
    instant: str
    target_path: str
    files: int
    bytes_copied: int
    seconds: float

    def record(self) -> dict:
        return {"action": "restore", "version": self.version, "instant": self.instant,
                "target_path": self.target_path, "files": self.files, "bytes_copied": self.bytes_copied,
                "seconds": round(self.seconds, 3)}

    def summary(self) -> str:
        return (f"restored backup version {self.version} ({self.instant}) to {self.target_path}: "
                f"{self.files} file(s), {self.bytes_copied / 1e6:.1f} MB in {self.seconds:.1f} s")


def require_empty_target(target: Storage, resumable: Manifest | None = None) -> None:
    """Refuse a target that holds anything; with `resumable`, one that holds anything but files of that
    version without its `hoodie.properties` (what an earlier attempt of the same restore left) is accepted."""
    if target.exists(PROPERTIES):
        raise BackupError(f"restore target {target.base_uri} is not empty: it holds a table; restore to a new path")
    if resumable is None:
        if target.listdir(""):
            raise BackupError(f"restore target {target.base_uri} is not empty; restore to a new path")
        return
    strangers = [info.path for info in walk_files(target) if info.path not in resumable.files]
    if strangers:
        raise BackupError(f"restore target {target.base_uri} is not empty ({strangers[0]}, ...); "
                          "restore to a new path")


def restore_version(store: BackupStore, version: int, target_path: str,
                    check: Callable[[], None] = lambda: None) -> RestoreResult:
    """Materialise backup `version` at `target_path` (empty, absent, or left so by an earlier attempt of this
    restore). `check` is called before `hoodie.properties` is written (the task's fence)."""
    started = time.monotonic()
    manifest: Manifest = store.manifest(version)
    target = open_storage(target_path)
    if target_path.rstrip("/") == manifest.source.rstrip("/"):
        raise BackupError(f"restore target {target_path} is the backed-up table itself; restore to a new path")
    require_empty_target(target, resumable=manifest)
    copied = 0
    for rel, stored in sorted(manifest.files.items()):
        if rel == PROPERTIES:
            continue
        copy_file(store.storage, stored.object, stored.size, target, rel)
        copied += stored.size
    props = parse_properties(store.storage.read_bytes(manifest.files[PROPERTIES].object).decode())
    for key in (PARTITIONS_PROP, PARTITIONS_INFLIGHT_PROP):
        props.pop(key, None)
    data = format_properties(props, f"restored from backup version {version} of {manifest.source}").encode()
    check()
    target.write_atomic(PROPERTIES, data)  # last: the table exists once its files do
    return RestoreResult(version, manifest.instant, target_path, len(manifest.files), copied + len(data),
                         time.monotonic() - started)
