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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import HudiError
from ..storage.table_storage import FileInfo
from ..timeline.instant import Action, State
from .file_names import BaseFileName, LogFileName
from .partitions import PartitionListing, list_partitions, listed_in_order
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


# A pass over many partitions (chunked_views) holds this many partitions' files at once, and keeps at most this many
# files of the listings its partition search took (the others are listed again, a chunk at a time).
PARTITIONS_AT_ONCE = 256
FILES_KEPT = 100_000


@dataclass(frozen=True)
class TimelineFacts:
    """What slicing any partition reads of the timeline: read once for a pass over many partitions."""
    committed: Callable[[str], bool]
    replaced: dict[tuple[str, str], str]            # (partition, file id) -> the completed replace commit
    pending_compaction: dict[tuple[str, str], str]  # (partition, file id) -> the pending plan's instant
    pending_clustering: dict[tuple[str, str], str]

    @classmethod
    def of(cls, table: TableParts, as_of: str | None = None) -> TimelineFacts:
        tl = table.timeline
        replaced: dict[tuple[str, str], str] = {}
        for inst in tl.completed((Action.REPLACE_COMMIT,)):
            if as_of is None or inst.timestamp <= as_of:
                meta = tl.commit_metadata(inst)
                for part, fids in (meta.partition_to_replace_file_ids or {}).items():
                    for fid in fids:
                        replaced[(part, fid)] = inst.timestamp
        # Pending plans, as of now (a plan is pending whatever `as_of` says).
        return cls(tl.committed_rule(), replaced, pending_compaction_groups(table), pending_clustering_groups(table))


def chunked_views(table: TableParts, partitions: Iterable[str] | None = None, as_of: str | None = None,
                  at_once: int | None = None, listing: PartitionListing | None = None) -> Iterator[FileSystemView]:
    """The file-system view of `partitions` (or of those `listing` names, with the files it holds; default: every
    partition of the table), as views of `at_once` partitions each (default PARTITIONS_AT_ONCE), in the order
    given, sharing one reading of the timeline: a pass over a giant table never holds its files all at once. The
    listing's files are taken out of it as their chunk is read."""
    facts = TimelineFacts.of(table, as_of)
    if listing is None and partitions is None:
        listing = list_partitions(table, files_kept=FILES_KEPT)
    elif listing is None:
        listing = PartitionListing(sorted({posixpath.normpath(p) if p else "" for p in partitions or ()}))
    names, at_once = listing.partitions, at_once or PARTITIONS_AT_ONCE
    for at in range(0, len(names), at_once):
        chunk = names[at:at + at_once]
        held = {p: listing.files.pop(p) for p in chunk if p in listing.files}
        yield FileSystemView(table, as_of=as_of, listing=PartitionListing(chunk, held), facts=facts)


def partition_paths(table: TableParts) -> list[str]:
    """Partition paths ('' for a non-partitioned table): folders holding a partition metafile and the
    partitions the commits name (see `partitions`), at any depth."""
    return list_partitions(table).partitions


class FileSystemView:
    def __init__(self, table: TableParts, as_of: str | None = None, partitions: Iterable[str] | None = None,
                 listing: PartitionListing | None = None, facts: TimelineFacts | None = None):
        """`partitions`: only these partitions, each listed on its own (storage requests follow their number,
        not the table's); `listing`: only the partitions it names (their files listed where it holds none);
        default: every partition of the table. `facts`: the timeline's, as read for `as_of` (default: read now)."""
        self.table = table
        self._facts = facts
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
        v8 = self.config.traits.log_files_named_by_writer
        facts = self._facts or TimelineFacts.of(self.table, self.as_of)
        self._committed = facts.committed
        self.replaced = facts.replaced
        self.pending_compaction = facts.pending_compaction
        self.pending_clustering = facts.pending_clustering

        slices: dict[tuple[str, str], dict[str, FileSlice]] = defaultdict(dict)
        v8_logs: list[tuple[str, LogFile]] = []
        for partition, infos in listed_in_order(self.table.storage, self._list_partition, self.partitions):
            for info in infos:
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
