"""Storage access for one table, through fsspec, with the two guarantees the timeline needs:
a written file appears whole or not at all, and a create never replaces an existing file."""
from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass

import fsspec
from fsspec.implementations.local import LocalFileSystem

from .errors import InstantConflictError

TEMP_PREFIX = ".tms-tmp-"


@dataclass(frozen=True)
class FileInfo:
    name: str       # base name
    path: str       # path relative to the table's base path
    size: int
    mtime: float | None
    is_dir: bool


class Storage:
    """Files of one table, addressed by paths relative to its base path."""

    def __init__(self, base_path: str, storage_options: dict | None = None):
        self.base_uri = base_path.rstrip("/")
        self.fs, root = fsspec.core.url_to_fs(self.base_uri, **(storage_options or {}))
        self.root = root.rstrip("/") or "/"
        self.is_local = isinstance(self.fs, LocalFileSystem)

    def full(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if rel else self.root

    # --- reading ---------------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        if self.is_local:
            return os.path.exists(self.full(rel))
        return self.fs.exists(self.full(rel))

    def read_bytes(self, rel: str) -> bytes:
        if self.is_local:
            with open(self.full(rel), "rb") as fh:
                return fh.read()
        return self.fs.cat_file(self.full(rel))

    def open(self, rel: str, mode: str = "rb"):
        return self.fs.open(self.full(rel), mode)

    def listdir(self, rel: str) -> list[FileInfo]:
        """Entries of a folder (none if it does not exist), temp files of unfinished writes excluded."""
        out = []
        if self.is_local:
            try:
                with os.scandir(self.full(rel)) as it:
                    for e in it:
                        if e.name.startswith(TEMP_PREFIX):
                            continue
                        is_dir = e.is_dir()
                        st = None if is_dir else e.stat()
                        out.append(FileInfo(e.name, posixpath.join(rel, e.name) if rel else e.name,
                                            0 if is_dir else st.st_size, None if is_dir else st.st_mtime, is_dir))
            except FileNotFoundError:
                return []
            return out
        try:
            entries = self.fs.ls(self.full(rel), detail=True)
        except FileNotFoundError:
            return []
        for e in entries:
            name = posixpath.basename(e["name"].rstrip("/"))
            if name.startswith(TEMP_PREFIX):
                continue
            mtime = e.get("mtime") or e.get("LastModified")
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else mtime
            out.append(FileInfo(name, posixpath.join(rel, name) if rel else name, int(e.get("size") or 0),
                                mtime, e.get("type") == "directory"))
        return out

    def names(self, rel: str) -> list[str]:
        """Just the names in a folder, as the store lists them (temp files of unfinished writes included:
        the caller skips names it cannot parse): the cheap listing the timeline reload uses."""
        if self.is_local:
            try:
                return os.listdir(self.full(rel))
            except FileNotFoundError:
                return []
        return [i.name for i in self.listdir(rel)]

    def info(self, rel: str) -> FileInfo:
        if self.is_local:
            st = os.stat(self.full(rel))
            return FileInfo(posixpath.basename(rel), rel, st.st_size, st.st_mtime, os.path.isdir(self.full(rel)))
        i = self.fs.info(self.full(rel))
        return FileInfo(posixpath.basename(rel), rel, int(i.get("size") or 0), i.get("mtime"),
                        i.get("type") == "directory")

    # --- writing ---------------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        self.fs.makedirs(self.full(rel), exist_ok=True)

    def write_atomic(self, rel: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write `data` so readers see the whole file or nothing. Without `overwrite`, raise
        InstantConflictError if the file exists (and leave it untouched)."""
        target = self.full(rel)
        parent = posixpath.dirname(target)
        if not self.is_local:
            # Object stores make a PUT visible atomically; exclusivity is checked first.
            if not overwrite and self.fs.exists(target):
                raise InstantConflictError(f"{rel} already exists")
            self.fs.makedirs(parent, exist_ok=True)
            self.fs.pipe_file(target, data)
            return
        os.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            if overwrite:
                os.replace(tmp, target)
            else:
                try:
                    os.link(tmp, target)  # atomic create-if-absent
                except FileExistsError:
                    raise InstantConflictError(f"{rel} already exists") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def write_new(self, rel: str, data: bytes) -> None:
        """A new data file (base or log file): exclusive create, not atomic (markers cover it)."""
        target = self.full(rel)
        if self.is_local:
            os.makedirs(posixpath.dirname(target), exist_ok=True)
            with open(target, "xb") as fh:
                fh.write(data)
            return
        if self.fs.exists(target):
            raise InstantConflictError(f"{rel} already exists")
        self.fs.pipe_file(target, data)

    def open_new(self, rel: str):
        """A new data file opened for a streamed write: exclusive create on local storage (object
        stores cannot refuse an existing key; markers cover them)."""
        if self.is_local:
            target = self.full(rel)
            os.makedirs(posixpath.dirname(target), exist_ok=True)
            return open(target, "xb")
        if self.fs.exists(self.full(rel)):
            raise InstantConflictError(f"{rel} already exists")
        return self.fs.open(self.full(rel), "wb")

    def append(self, rel: str, data: bytes) -> None:
        """Append to a log file (v6 appends blocks to the slice's current log file)."""
        if self.is_local:
            with open(self.full(rel), "ab") as fh:
                fh.write(data)
            return
        with self.fs.open(self.full(rel), "ab") as fh:
            fh.write(data)

    def touch(self, rel: str) -> None:
        if self.is_local:
            target = self.full(rel)
            os.makedirs(posixpath.dirname(target), exist_ok=True)
            with open(target, "a"):
                pass
            os.utime(target, None)
            return
        self.fs.touch(self.full(rel), truncate=True)

    def delete(self, rel: str, *, missing_ok: bool = True) -> bool:
        try:
            if self.is_local:
                os.unlink(self.full(rel))
            else:
                self.fs.rm_file(self.full(rel))
            return True
        except FileNotFoundError:
            if missing_ok:
                return False
            raise

    def delete_tree(self, rel: str) -> None:
        if self.exists(rel):
            self.fs.rm(self.full(rel), recursive=True)
