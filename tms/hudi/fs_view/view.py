"""File-system view: partitions, file groups and file slices as a reader at a point in time sees them.

Slicing follows the table version: on v6 a log file names the base instant of its slice; on v8+ a log
file names its delta commit, and belongs to the latest slice whose base instant is before that delta
commit's completion time. Files of instants that are not completed (at `as_of`) are left out, and so are
file groups replaced by a completed replace commit.

An instant the active timeline no longer holds and older than its start was archived, so it completed (Hudi's
containsOrBeforeTimelineStarts): its files are read, and on v8+ its log files are sliced by the completion time
Hudi's archived timeline keeps. A log file whose slice cannot be told (its archived delta commit has no
completion time on record and a slice begins after the commit's instant time) is refused."""
from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import HudiError
from ..storage.table_storage import FileInfo
from ..timeline.instant import Action, State
from .file_names import BaseFileName, LogFileName
from .partitions import PartitionListing, list_partitions
from .parts import TableParts
from .plans import pending_clustering_groups, pending_compaction_groups


@dataclass(frozen=True)
class BaseFile:
    path: str      # relative to the base path
    size: int
    name: BaseFileName

    @property
    def instant(self) -> str:
        return self.name.instant

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True)
class LogFile:
    path: str
    size: int
    name: LogFileName
    completion_time: str | None = None  # of the writing delta commit (v8+)

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.path)


@dataclass
class FileSlice:
    partition: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)

    @property
    def log_bytes(self) -> int:
        return sum(f.size for f in self.log_files)

    @property
    def base_size(self) -> int:
        return self.base_file.size if self.base_file else 0

    @property
    def total_bytes(self) -> int:
        return self.base_size + self.log_bytes


@dataclass
class FileGroup:
    partition: str
    file_id: str
    slices: list[FileSlice] = field(default_factory=list)  # ascending base instant

    @property
    def latest_slice(self) -> FileSlice | None:
        return self.slices[-1] if self.slices else None


@dataclass(frozen=True)
class FileGroupStats:
    """What the planner sizes plans by: the latest (merged) slice of one file group."""
    partition: str
    file_id: str
    base_instant: str
    base_file: str | None
    base_size: int
    log_count: int
    log_bytes: int
    num_records: int | None
    pending_compaction: str | None
    pending_clustering: str | None


def partition_paths(table: TableParts) -> list[str]:
    """Partition paths ('' for a non-partitioned table): folders holding a partition metafile and the
    partitions the commits name (see `partitions`), at any depth."""
    return list_partitions(table).partitions


class FileSystemView:
    def __init__(self, table: TableParts, as_of: str | None = None, partitions: Iterable[str] | None = None,
                 listing: PartitionListing | None = None):
        """`partitions`: only these partitions, each listed on its own (storage requests follow their number,
        not the table's); `listing`: only the partitions it names (their files listed where it holds none);
        default: every partition of the table."""
        self.table = table
        self._given_listing = listing
        self.config = table.config
        self.timeline = table.timeline
        self.as_of = as_of
        if partitions is not None:
            self.partitions = sorted({posixpath.normpath(p) if p else "" for p in partitions})
            self._partition_listing = PartitionListing(self.partitions)
        self._build()

    # --- visibility -----------------------------------------------------------------------------
    def _visible(self, ts: str) -> bool:
        return self.as_of is None or ts <= self.as_of

    def is_completed(self, ts: str) -> bool:
        """Committed (completed on the active timeline, or archived), and visible at `as_of`."""
        return self._visible(ts) and self._committed(ts)

    def _completion_time(self, ts: str) -> str | None:
        done = self.timeline.states_of(ts).get(State.COMPLETED)
        if done is not None:
            return done.completion_time
        return self.timeline.archived_completion_time(ts) if self._committed(ts) else None

    # --- building --------------------------------------------------------------------------------
    def _build(self) -> None:
        tl, v8 = self.timeline, self.config.traits.log_files_named_by_writer
        self._committed = tl.committed_rule()
        self.replaced: dict[tuple[str, str], str] = {}
        for inst in tl.completed((Action.REPLACE_COMMIT,)):
            if self._visible(inst.timestamp):
                meta = tl.commit_metadata(inst)
                for part, fids in (meta.partition_to_replace_file_ids or {}).items():
                    for fid in fids:
                        self.replaced[(part, fid)] = inst.timestamp
        # Pending plans, as of now (a plan is pending whatever `as_of` says).
        self.pending_compaction = pending_compaction_groups(self.table)
        self.pending_clustering = pending_clustering_groups(self.table)

        slices: dict[tuple[str, str], dict[str, FileSlice]] = defaultdict(dict)
        v8_logs: list[tuple[str, LogFile]] = []
        for partition in self.partitions:
            for info in self._list_partition(partition):
                if info.is_dir:
                    continue
                base = BaseFileName.parse(info.name)
                if base is not None:
                    if not self.is_completed(base.instant):
                        continue  # inflight, failed or pending compaction's output
                    fs = self._slice(slices, partition, base.file_id, base.instant)
                    fs.base_file = BaseFile(info.path, info.size, base)
                    continue
                log = LogFileName.parse(info.name)
                if log is None:
                    continue
                if v8:
                    if not self.is_completed(log.instant):
                        continue
                    v8_logs.append((partition, LogFile(info.path, info.size, log, self._completion_time(log.instant))))
                else:
                    if not self._visible(log.instant):
                        continue
                    if not (self.is_completed(log.instant)
                            or self.pending_compaction.get((partition, log.file_id)) == log.instant):
                        continue
                    self._slice(slices, partition, log.file_id, log.instant).log_files.append(
                        LogFile(info.path, info.size, log))
        # A pending compaction opens a new slice (no base file yet) that new log files go to.
        for (partition, fid), tc in self.pending_compaction.items():
            if (partition, fid) in slices and self._visible(tc):
                self._slice(slices, partition, fid, tc)
        # In the order of their names (delta commit time, version, write token), as Java adds them: the slice a
        # log file opens depends on the slices before it, and a listing comes in any order (a log-only file group
        # listed newest first would be cut into one slice per log file, the latest holding only the last one).
        v8_logs.sort(key=lambda entry: entry[1].name.sort_key)
        for partition, log_file in v8_logs:
            group = slices[(partition, log_file.name.file_id)]
            if log_file.completion_time is None and any(b > log_file.name.instant for b in group):
                raise HudiError(f"cannot tell which file slice {log_file.path} belongs to: its delta commit "
                                f"{log_file.name.instant} was archived and Hudi's archived timeline has no "
                                "completion time for it")
            owner = max((b for b in group if b <= (log_file.completion_time or log_file.name.instant)), default=None)
            if owner is None:  # a log-only file group started by this delta commit
                owner = log_file.name.instant
                self._slice(slices, partition, log_file.name.file_id, owner)
            group[owner].log_files.append(log_file)
        groups: list[FileGroup] = []
        replaced: list[FileGroup] = []
        for (partition, fid), by_instant in slices.items():
            ordered = [by_instant[k] for k in sorted(by_instant)]
            for fs in ordered:
                fs.log_files.sort(key=lambda f: f.name.sort_key)
            (replaced if (partition, fid) in self.replaced else groups).append(FileGroup(partition, fid, ordered))
        groups.sort(key=lambda g: (g.partition, g.file_id))
        replaced.sort(key=lambda g: (g.partition, g.file_id))
        self._groups = groups
        self._replaced_groups = replaced

    @staticmethod
    def _slice(slices: dict[tuple[str, str], dict[str, FileSlice]], partition: str, fid: str,
               instant: str) -> FileSlice:
        group = slices[(partition, fid)]
        fs = group.get(instant)
        if fs is None:
            fs = group[instant] = FileSlice(partition, fid, instant)
        return fs

    def _list_partition(self, partition: str) -> list[FileInfo]:
        listed = self._partition_listing.files.get(partition)
        return listed if listed is not None else self.table.storage.listdir(partition)

    @cached_property
    def _partition_listing(self) -> PartitionListing:
        return self._given_listing if self._given_listing is not None else list_partitions(self.table)

    @cached_property
    def partitions(self) -> list[str]:
        return self._partition_listing.partitions

    # --- queries ---------------------------------------------------------------------------------
    def file_groups(self, partition: str | None = None) -> list[FileGroup]:
        return [g for g in self._groups if partition is None or g.partition == partition]

    def replaced_file_groups(self, partition: str | None = None) -> list[FileGroup]:
        """File groups a completed replace commit (clustering, insert_overwrite) replaced: readers skip
        them; the cleaner deletes them once the replace commit is old enough."""
        return [g for g in self._replaced_groups if partition is None or g.partition == partition]

    def latest_slices(self) -> list[FileSlice]:
        return [g.latest_slice for g in self._groups if g.latest_slice]

    def merged_latest_slices(self) -> list[FileSlice]:
        """Latest slices for reading: a slice opened by a pending compaction has no base file yet, so
        it is read together with the slice before it (base + both slices' logs), as Hudi does."""
        out = []
        for g in self._groups:
            latest = g.latest_slice
            if latest is None:
                continue
            if (latest.base_file is None and len(g.slices) > 1
                    and self.pending_compaction.get((g.partition, g.file_id)) == latest.base_instant):
                prev = g.slices[-2]
                latest = FileSlice(g.partition, g.file_id, prev.base_instant, prev.base_file,
                                   prev.log_files + latest.log_files)
            out.append(latest)
        return out

    def file_group_stats(self, *, record_counts: bool = True) -> list[FileGroupStats]:
        """`record_counts`: read each base file's record count from the commit that wrote it (one commit's
        metadata per base instant: all of a table compacted at once, for one partition's groups)."""
        counts = self._base_record_counts() if record_counts else {}
        out = []
        for fs in self.merged_latest_slices():
            key = (fs.partition, fs.file_id)
            out.append(FileGroupStats(
                partition=fs.partition, file_id=fs.file_id, base_instant=fs.base_instant,
                base_file=fs.base_file.path if fs.base_file else None, base_size=fs.base_size,
                log_count=len(fs.log_files), log_bytes=fs.log_bytes,
                num_records=counts.get(fs.base_file.path) if fs.base_file else None,
                pending_compaction=self.pending_compaction.get(key),
                pending_clustering=self.pending_clustering.get(key)))
        return out

    def _base_record_counts(self) -> dict[str, int]:
        """Record counts of base files, from the write stats of the commits that wrote them."""
        wanted = {fs.base_file.instant for fs in self.latest_slices() if fs.base_file}
        counts: dict[str, int] = {}
        for ts in wanted:
            inst = self.timeline.get(ts)
            if inst is None or not inst.is_completed:
                continue
            try:
                meta = self.timeline.commit_metadata(inst)
            except Exception:  # a commit we cannot parse only loses its statistics
                continue
            for stat in meta.write_stats():
                if stat.path and BaseFileName.parse(posixpath.basename(stat.path)):  # any base format
                    counts[stat.path] = stat.num_writes - stat.num_deletes if stat.num_deletes else stat.num_writes
        return counts
