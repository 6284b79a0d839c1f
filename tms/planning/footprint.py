"""What a pending instant has written so far, from the two sources Hudi's rollback reads: the markers in
`.hoodie/.temp/<instant>/` and the write stats in the instant's inflight file.

Markers are direct (one empty file `<partition>/<file>.marker.<TYPE>` per data file) or, with the timeline
server, `MARKERS<n>` files listing such names one per line. An APPEND marker names the log file; writers
before HUDI-1517 named the base file instead, meaning "the latest log file of this file group"."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import StrEnum

from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Instant, State
from tms.hudi.timeline.serde import MetadataFormatError, WriteStat, parse_commit_metadata

MARKER_ROOT = ".hoodie/.temp"
_MARKER = ".marker."
_SERVER_MARKERS = "MARKERS"


class IOType(StrEnum):
    CREATE = "CREATE"
    MERGE = "MERGE"
    APPEND = "APPEND"


@dataclass(frozen=True)
class WrittenFile:
    path: str  # relative to the base path
    io_type: IOType

    @property
    def partition(self) -> str:
        return posixpath.dirname(self.path)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def log_name(self) -> LogFileName | None:
        return LogFileName.parse(self.name)

    @property
    def file_id(self) -> str | None:
        parsed = self.log_name or BaseFileName.parse(self.name)
        return parsed.file_id if parsed else None


def marker_dir(timestamp: str) -> str:
    return f"{MARKER_ROOT}/{timestamp}"


def _marker_names(storage: Storage, root: str) -> list[str]:
    """Marker names (relative to the instant's marker folder) of both marker kinds."""
    names, folders = [], [""]
    while folders:
        rel = folders.pop()
        for info in storage.listdir(posixpath.join(root, rel) if rel else root):
            child = posixpath.join(rel, info.name) if rel else info.name
            if info.is_dir:
                folders.append(child)
            elif _MARKER in info.name:
                names.append(child)
            elif not rel and info.name.startswith(_SERVER_MARKERS) and info.name[len(_SERVER_MARKERS):].isdigit():
                text = storage.read_bytes(posixpath.join(root, child)).decode("utf-8")
                names.extend(line.strip() for line in text.splitlines() if line.strip())
    return names


def _latest_log(storage: Storage, partition: str, file_id: str, base_instant: str) -> str | None:
    logs = [n for n in (LogFileName.parse(i.name) for i in storage.listdir(partition)) if n is not None
            and n.file_id == file_id and n.instant == base_instant]
    return posixpath.join(partition, str(max(logs))) if logs else None


def marker_files(storage: Storage, timestamp: str) -> list[WrittenFile] | None:
    """Files the markers of `timestamp` name, or None when the instant has no marker folder."""
    root = marker_dir(timestamp)
    if not storage.exists(root):
        return None
    out = []
    for name in _marker_names(storage, root):
        path, _, kind = name.rpartition(_MARKER)
        try:
            io_type = IOType(kind)
        except ValueError:
            continue  # not a marker Hudi writes
        base = BaseFileName.parse(posixpath.basename(path))
        if io_type is IOType.APPEND and base is not None:  # an old-style APPEND marker
            log_path = _latest_log(storage, posixpath.dirname(path), base.file_id, base.instant)
            if log_path is None:
                continue
            path = log_path
        out.append(WrittenFile(path, io_type))
    return out


def _inflight_stats(table: HudiTable, timestamp: str) -> list[WriteStat]:
    inflight = table.timeline.states_of(timestamp).get(State.INFLIGHT)
    if inflight is None:
        return []
    try:
        return parse_commit_metadata(table.timeline.read(inflight)).write_stats()
    except MetadataFormatError:
        return []  # the inflight file of a compaction or clustering holds its plan, not write stats


def written_files(table: HudiTable, instant: Instant) -> list[WrittenFile]:
    """The data files a pending instant wrote or is writing: its markers, and the files its inflight
    write stats name (Python and Java writers record the final stats there before completing)."""
    found = {f.path: f for f in marker_files(table.storage, instant.timestamp) or []}
    for stat in _inflight_stats(table, instant.timestamp):
        partition = stat.partition_path or ""
        paths = [stat.path] if stat.path else []
        paths += [posixpath.join(partition, n) if partition else n for n in stat.log_files or []]
        for path in paths:
            if path in found:
                continue
            if LogFileName.parse(path):
                found[path] = WrittenFile(path, IOType.APPEND)
            elif BaseFileName.parse(posixpath.basename(path)):
                found[path] = WrittenFile(path, IOType.CREATE if stat.prev_commit in (None, "null") else IOType.MERGE)
    return list(found.values())


def touched_file_groups(table: HudiTable, instant: Instant) -> set[tuple[str, str]]:
    """(partition, fileId) of every file group a pending instant writes to, including the ones its
    inflight workload names before any file exists."""
    groups = {(f.partition, f.file_id) for f in written_files(table, instant) if f.file_id}
    groups |= {(s.partition_path or "", s.file_id) for s in _inflight_stats(table, instant.timestamp) if s.file_id}
    return groups


def file_groups_of_pending_writes(table: HudiTable) -> set[tuple[str, str]]:
    """File groups that commits and delta commits still requested or inflight write to."""
    out: set[tuple[str, str]] = set()
    for inst in table.timeline.inflight_writes():
        out |= touched_file_groups(table, inst)
    return out
