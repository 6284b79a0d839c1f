"""Lost and damaged data files. Each completed commit on the active timeline names the files it wrote, with
their sizes (its write stats); those the table still needs must be on storage as they were written:

- a base file, with the size its commit recorded;
- a log file, not empty, and at least the size its latest writer recorded (a v6 log file grows: later delta
  commits and rollbacks append blocks to it).

A file the table no longer needs is not looked for: a base file a later base file of its file group
supersedes (a clean may have deleted it), a log file a later base file compacted, the files of a file group a
replace commit replaced. What supersedes a file is always written by a later instant, so the files of the
latest commits are told exactly from those commits alone (what the planner checks on each pass)."""
from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from ..errors import HudiError, InstantVanishedError
from ..fs_view.file_names import BaseFileName, LogFileName
from ..fs_view.view import FileSlice, FileSystemView
from ..metadata import keys as K
from ..metadata.reader import MetadataTable, metadata_partitions
from ..storage.table_storage import FileInfo, Storage
from .hudi_table import HudiTable


@dataclass(frozen=True)
class WrittenFile:
    path: str       # relative to the base path
    partition: str
    file_id: str
    instant: str    # the latest completed commit that wrote it
    size: int       # the size that commit recorded (0: none)
    is_log: bool


@dataclass(frozen=True)
class DamagedFile:
    path: str
    detail: str

    def line(self) -> str:
        return f"{self.path}: {self.detail}"


class DamagedFilesError(HudiError):
    """Files a reader or a table service needs that are missing or damaged: it refuses to go on without them."""

    def __init__(self, what: str, damaged: list[DamagedFile]):
        self.damaged = damaged
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        super().__init__(f"{what}: missing or damaged file {damaged[0].line()}{more}")


def written_files(table: HudiTable, *, latest: int | None = None) -> list[WrittenFile]:
    """The files the completed commits on the active timeline (only the `latest` of them, by instant time) wrote
    that the table still needs."""
    tl = table.timeline
    commits = tl.completed_writes()
    if latest is not None:
        commits = commits[-latest:] if latest > 0 else []
    by_writer = table.config.traits.log_files_named_by_writer
    replaced: set[tuple[str, str]] = set()
    latest_base: dict[tuple[str, str], str] = {}   # file group -> its latest base file's instant
    files: dict[str, WrittenFile] = {}
    # Where a file's slice begins at the latest: a base file's instant; a log file's base instant (v6) or its
    # writer's completion time (v8+: the slice is the latest one that began before).
    begins: dict[str, str] = {}
    for inst in commits:
        try:
            meta = tl.commit_metadata(inst)
        except InstantVanishedError:
            continue  # rolled back or archived since the timeline was listed
        for part, fids in (meta.partition_to_replace_file_ids or {}).items():
            replaced.update((part or "", fid) for fid in fids)
        for stat in meta.write_stats():
            path = stat.path or ""
            name = posixpath.basename(path)
            log, base = LogFileName.parse(name), BaseFileName.parse(name)
            if log is not None:
                file_id = log.file_id
                begins[path] = (inst.completion_time or inst.timestamp) if by_writer else log.instant
            elif base is not None:
                file_id = base.file_id
                begins[path] = base.instant
            else:
                continue
            part = stat.partition_path if stat.partition_path is not None else posixpath.dirname(path)
            if base is not None:
                latest_base[(part, file_id)] = max(latest_base.get((part, file_id), ""), base.instant)
            before = files.get(path)
            files[path] = WrittenFile(path, part, file_id, inst.timestamp,
                                      max(stat.file_size_in_bytes or 0, before.size if before else 0),
                                      log is not None)

    def needed(f: WrittenFile) -> bool:
        group = (f.partition, f.file_id)
        if group in replaced:
            return False
        newest = latest_base.get(group, "")
        if not f.is_log:
            return begins[f.path] == newest
        # a later base file compacted it
        return begins[f.path] > newest if by_writer else begins[f.path] >= newest
    return [f for f in files.values() if needed(f)]


def damage_of(f: WrittenFile, size: int) -> str | None:
    """What is wrong with `f`, found on storage with `size` bytes (None: nothing)."""
    if f.is_log and size == 0:
        return f"empty log file; {f.instant} wrote {f.size} bytes to it"
    if f.is_log and size < f.size:
        return f"truncated: {size} bytes, {f.instant} wrote {f.size}"
    if not f.is_log and f.size and size != f.size:
        return f"{size} bytes, {f.instant} wrote {f.size}"
    return None


def missing(f: WrittenFile) -> DamagedFile:
    return DamagedFile(f.path, f"not found on storage; {f.instant} wrote it")


def find_damaged(storage: Storage, files: Iterable[WrittenFile]) -> list[DamagedFile]:
    """The files of `files` that are missing or damaged on storage (each looked up)."""
    out = []
    for f in sorted(files, key=lambda f: f.path):
        try:
            size = storage.info(f.path).size
        except FileNotFoundError:
            out.append(missing(f))
            continue
        if (detail := damage_of(f, size)) is not None:
            out.append(DamagedFile(f.path, detail))
    return out


def damaged_files(table: HudiTable, *, latest: int | None = None) -> list[DamagedFile]:
    """The missing or damaged files among those the table needs of its completed commits (the `latest` of them)."""
    return find_damaged(table.storage, written_files(table, latest=latest))


class _ListedView(FileSystemView):
    """The file-system view a listing other than storage's gives (the metadata table's)."""

    def __init__(self, table: HudiTable, listing: dict[str, dict[str, int]], as_of: str | None):
        self._listing = listing
        super().__init__(table, as_of)

    @cached_property
    def partitions(self) -> list[str]:
        return sorted(self._listing)

    def _list_partition(self, partition: str) -> list[FileInfo]:
        return [FileInfo(name, posixpath.join(partition, name) if partition else name, size, None, False)
                for name, size in self._listing.get(partition, {}).items()]


def _slice_files(slices: list[FileSlice]) -> dict[str, int]:
    return {f.path: f.size for fs in slices for f in ([fs.base_file] if fs.base_file else []) + fs.log_files}


def require_listed_files(table: HudiTable, view: FileSystemView) -> None:
    """Raise DamagedFilesError when a file of the latest slices the metadata table's file listing gives (where the
    table has one: Hudi's readers trust it) is not among those `view` found on storage, or is a base file of
    another size: reading on would return a part of the table as if it were the whole."""
    if K.FILES not in metadata_partitions(table):
        return
    mdt = MetadataTable.open(table)
    if mdt is None:
        return
    listed = _slice_files(_ListedView(table, mdt.file_listing(), view.as_of).merged_latest_slices())
    stored = _slice_files(view.merged_latest_slices())
    damaged = []
    for path, size in sorted(listed.items()):
        if path not in stored:
            damaged.append(DamagedFile(path, "listed by the metadata table, not found on storage"))
        elif size != stored[path] and not LogFileName.parse(posixpath.basename(path)):
            damaged.append(DamagedFile(path, f"{stored[path]} bytes, the metadata table lists {size}"))
    if damaged:
        raise DamagedFilesError(f"table {table.config.name} cannot be read whole", damaged)


def require_input_files(table: HudiTable, what: str, groups: set[tuple[str, str]], inputs: Iterable[str]) -> None:
    """A table service's refusal to rewrite file groups without all of their files: raise DamagedFilesError when
    a file of `groups` (partition, file id) the retained commits wrote and the table needs, or one of `inputs`
    (the plan's files, relative), is missing, truncated or an empty log file. Without it the rewrite would
    make a file slice of what is left, and lose the rest for good."""
    needed = {f.path: f for f in written_files(table) if (f.partition, f.file_id) in groups}
    for path in inputs:
        if path not in needed:  # written by an archived commit: no size on record
            name = LogFileName.parse(posixpath.basename(path))
            needed[path] = WrittenFile(path, "", name.file_id if name else "", "an archived commit", 0,
                                       name is not None)
    damaged = find_damaged(table.storage, needed.values())
    if damaged:
        raise DamagedFilesError(what, damaged)


def require_readable_inputs(storage: Storage, what: str, paths: Iterable[str]) -> None:
    """The check a table service's task makes before it merges its input files: each one on storage, no log file
    empty (a log reader would take an empty file for one without blocks)."""
    damaged = []
    for path in paths:
        try:
            size = storage.info(path).size
        except FileNotFoundError:
            damaged.append(DamagedFile(path, "not found on storage"))
            continue
        if size == 0 and LogFileName.parse(posixpath.basename(path)):
            damaged.append(DamagedFile(path, "empty log file"))
    if damaged:
        raise DamagedFilesError(what, damaged)
