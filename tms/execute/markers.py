"""Markers: an empty file `.hoodie/.temp/<instant>/<partition>/<data file>.marker.<IO type>` written before
each data file of an instant, as Hudi's direct markers are. They name every file an attempt may have
written, so that files of failed task attempts are deleted before the instant completes and a failed
attempt's files are found for its rollback. They are removed when the instant completes."""
from __future__ import annotations

import posixpath

from tms.hudi.storage.table_storage import Storage

MARKER_ROOT = ".hoodie/.temp"
_SUFFIX = ".marker."
CREATE, MERGE = "CREATE", "MERGE"  # a new file group's file; a new version of an existing file group


def marker_dir(instant: str) -> str:
    return f"{MARKER_ROOT}/{instant}"


def create_marker(storage: Storage, instant: str, data_path: str, io_type: str) -> None:
    storage.touch(f"{marker_dir(instant)}/{data_path}{_SUFFIX}{io_type}")


def marked_files(storage: Storage, instant: str) -> list[str]:
    """Paths (relative to the base path) of the data files the instant's markers name."""
    root = marker_dir(instant)
    out, folders = [], [root]
    while folders:
        folder = folders.pop()
        for info in storage.listdir(folder):
            if info.is_dir:
                folders.append(info.path)
            elif _SUFFIX in info.name:
                out.append(posixpath.relpath(info.path, root).rsplit(_SUFFIX, 1)[0])
    return sorted(out)


def delete_unreferenced(storage: Storage, instant: str, referenced: set[str]) -> list[str]:
    """Delete the marked files that the instant's write stats do not reference: output of task attempts
    that failed or were superseded. Returns their paths."""
    stray = [path for path in marked_files(storage, instant) if path not in referenced]
    for path in stray:
        storage.delete(path)
    return stray


def delete_markers(storage: Storage, instant: str) -> None:
    storage.delete_tree(marker_dir(instant))
