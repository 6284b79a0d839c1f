"""Where a table's backups live under their destination, and the manifest of one version.

    <destination>/<table name>-<table id>/
        versions/<N>.json      the manifest of version N: every file of the table as of its instant, each
                               with the object that holds its bytes; written last, so a version with a
                               manifest is complete
        objects/<N>/<path>     the files version N copied first (the table's own relative paths)

A version that finds a file unchanged (same path, same size) in the previous version names the previous
version's object instead of copying it: a daily backup copies the day's files and the timeline's new
instants only. Hudi names every data file once (file id, write token, instant), and a log file grows only by
appended blocks, so path and size identify a file's bytes."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tms.hudi.storage.table_storage import Storage, open_storage

from .errors import BackupError

MANIFEST_FORMAT = 1
VERSIONS = "versions"
OBJECTS = "objects"


def backup_root(destination: str, table_name: str, table_id: int) -> str:
    """The folder of one table's backups under a policy's destination."""
    return f"{destination.rstrip('/')}/{table_name}-{table_id}"


def manifest_path(version: int) -> str:
    return f"{VERSIONS}/{version}.json"


def object_path(version: int, rel: str) -> str:
    return f"{OBJECTS}/{version}/{rel}"


@dataclass(frozen=True)
class StoredFile:
    object: str   # relative to the backup root
    size: int


@dataclass
class Manifest:
    version: int
    instant: str                      # the last completed instant the version holds
    source: str                       # the table's base path
    table_version: int
    created_at: str                   # ISO 8601, UTC
    files: dict[str, StoredFile] = field(default_factory=dict)  # table-relative path -> its bytes
    files_copied: int = 0
    bytes_copied: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    def to_json(self) -> bytes:
        doc: dict[str, Any] = {
            "format": MANIFEST_FORMAT, "version": self.version, "instant": self.instant, "source": self.source,
            "table_version": self.table_version, "created_at": self.created_at,
            "files_copied": self.files_copied, "bytes_copied": self.bytes_copied,
            "files": {rel: [f.object, f.size] for rel, f in sorted(self.files.items())}}
        return json.dumps(doc, indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        doc = json.loads(data)
        if doc.get("format") != MANIFEST_FORMAT:
            raise BackupError(f"backup manifest format {doc.get('format')!r} is not {MANIFEST_FORMAT}")
        return cls(version=int(doc["version"]), instant=doc["instant"], source=doc["source"],
                   table_version=int(doc["table_version"]), created_at=doc["created_at"],
                   files={rel: StoredFile(obj, int(size)) for rel, (obj, size) in doc["files"].items()},
                   files_copied=int(doc["files_copied"]), bytes_copied=int(doc["bytes_copied"]))


class BackupStore:
    """One table's backups at their root, through the storage abstraction (local, S3, ...)."""

    def __init__(self, root: str, storage: Storage | None = None):
        self.root = root.rstrip("/")
        self.storage = storage or open_storage(self.root)

    def versions(self) -> list[int]:
        """The complete versions, ascending."""
        out = []
        for info in self.storage.listdir(VERSIONS):
            stem, _, ext = info.name.partition(".")
            if ext == "json" and stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def manifest(self, version: int) -> Manifest:
        try:
            return Manifest.from_json(self.storage.read_bytes(manifest_path(version)))
        except FileNotFoundError:
            raise BackupError(f"backup version {version} does not exist under {self.root}") from None

    def manifests(self) -> list[Manifest]:
        return [self.manifest(v) for v in self.versions()]

    def latest(self) -> Manifest | None:
        versions = self.versions()
        return self.manifest(versions[-1]) if versions else None
