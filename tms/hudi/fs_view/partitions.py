"""A table's partitions, found as Hudi finds them: the folders that hold a partition metafile
(`.hoodie_partition_metadata`, or `.hoodie_partition_metadata.<format>` when the writer used the base
file format for it), and the partition paths the completed commits name.

The number of partition fields says nothing about the depth: a time-based key generator writes one field
as several folder levels (`2024/01/15/10`), a custom one mixes levels, and values may be URL-encoded.
Like Java's file-system-backed listing, a folder holding a metafile is a partition and is not searched
further; other folders are searched level by level (`.hoodie` and hidden folders excluded)."""
from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import TypeVar
from weakref import WeakKeyDictionary

from ..errors import InstantVanishedError
from ..storage.table_storage import FileInfo, LocalStorage, Storage
from ..timeline.instant import Instant
from ..timeline.timeline import WRITE_ACTIONS, Timeline
from .parts import TableParts

PARTITION_METAFILE = ".hoodie_partition_metadata"
# Folder listings in flight at once on a remote store: a listing waits tens of milliseconds on the network, so a
# level of partitions is listed in parallel (a page's 200 listings on S3: seconds one after another).
LISTING_THREADS = 16

_T = TypeVar("_T")


def listed_in_order(storage: Storage, listing: Callable[[str], _T], folders: list[str]) -> Iterator[tuple[str, _T]]:
    """Each of `folders` with `listing` of it, in order: on a remote store up to LISTING_THREADS at a time, on a
    local disk one after another."""
    if len(folders) < 2 or isinstance(storage, LocalStorage):
        yield from ((rel, listing(rel)) for rel in folders)
        return
    threads = min(LISTING_THREADS, len(folders))
    with ThreadPoolExecutor(threads, thread_name_prefix="tms-listing") as pool:
        ahead: deque[tuple[str, Future[_T]]] = deque()  # a bounded window: a level may hold 100,000 folders
        rest = iter(folders)
        for rel in islice(rest, 2 * threads):
            ahead.append((rel, pool.submit(listing, rel)))
        while ahead:
            rel, listed = ahead.popleft()
            for following in islice(rest, 1):
                ahead.append((following, pool.submit(listing, following)))
            yield rel, listed.result()


@dataclass
class PartitionListing:
    """The partitions found, with the listing of each one taken while searching (so the file-system view
    does not list a partition twice)."""
    partitions: list[str]
    files: dict[str, list[FileInfo]] = field(default_factory=dict)


def is_partition_metafile(name: str) -> bool:
    return name == PARTITION_METAFILE or name.startswith(PARTITION_METAFILE + ".")


def find_partition_folders(storage: Storage, files_kept: int | None = None) -> PartitionListing:
    """Every folder under the base path holding a partition metafile ('' for the base path itself), with the
    listings of the first ones found while they hold at most `files_kept` files in all (None: every listing):
    a pass over a giant table holds the partitions' names, not their files."""
    found: list[str] = []
    listed: dict[str, list[FileInfo]] = {}
    kept = 0
    level = [""]
    while level:
        next_level: list[str] = []
        for rel, entries in listed_in_order(storage, storage.listdir, level):
            if any(not e.is_dir and is_partition_metafile(e.name) for e in entries):
                found.append(rel)
                if files_kept is None or kept + len(entries) <= files_kept:
                    listed[rel] = entries
                    kept += len(entries)
                continue
            next_level.extend(e.path for e in entries if e.is_dir and not e.name.startswith("."))
        level = next_level
    return PartitionListing(sorted(found), listed)


@dataclass
class PartitionSample:
    """Partitions found by a bounded search (sample_partition_folders), with their listings; `share`: the fraction
    of the table's partitions they stand for (1.0: every partition folder was found)."""
    listing: PartitionListing
    share: float

    @property
    def complete(self) -> bool:
        return self.share == 1.0


def sample_partition_folders(storage: Storage, listings: int) -> PartitionSample:
    """The partition folders find_partition_folders finds, searching with about `listings` folder listings at
    most: a level holding more folders than the listings left can search is sampled, evenly spaced (in name
    order) over it, and the sample's share of that level counted. A folder's names are listed first (the cheap
    listing: a hundred thousand partitions' names in one), a partition's files then (sizes and times). Its cost
    follows `listings`, never the table's partitions."""
    found: dict[str, list[FileInfo]] = {}
    level, share, left = [""], 1.0, max(1, listings)
    while level and left > 0:
        if 2 * len(level) > left:  # a folder may cost two listings: its names, then (a partition) its files
            room = max(1, left // 2)
            step = len(level) / room
            share *= room / len(level)
            level = [level[int(n * step)] for n in range(room)]
        next_level: list[str] = []
        # The level fits the listings left (two a folder at most), so its folders are listed all at once.
        for rel, (names, files) in listed_in_order(storage, lambda rel: _names_then_files(storage, rel), level):
            if names is None:  # a file beside the folders
                continue
            left -= 1
            if files is not None:
                found[rel] = files
                left -= 1
                continue
            next_level.extend(f"{rel}/{n}" if rel else n for n in names if n[:1] != ".")
        level = sorted(next_level)
    if level:  # listings ran out above the partitions still unsearched: those found stand for a part only
        share *= len(found) / (len(found) + len(level)) if found else 0.0
    return PartitionSample(PartitionListing(sorted(found), found), share)


def _names_then_files(storage: Storage, rel: str) -> tuple[list[str] | None, list[FileInfo] | None]:
    """A folder's names (None: not a folder), then its files if it is a partition."""
    try:
        names = storage.names(rel)
    except NotADirectoryError:
        return None, None
    return names, storage.listdir(rel) if any(is_partition_metafile(n) for n in names) else None


@dataclass
class _CommittedPartitions:
    """What a loaded timeline's completed writes name, kept up to date with what is added to it."""
    mark: tuple[int, int]
    counted: set[str] = field(default_factory=set)  # instant times whose partitions are in `partitions`
    partitions: set[str] = field(default_factory=set)


# The planner keeps timelines loaded between passes: each completed write's metadata is read once, and a pass
# costs the instants added since the last one (all of them again only after an instant file was removed).
_COMMITTED: WeakKeyDictionary[Timeline, _CommittedPartitions] = WeakKeyDictionary()


def committed_partitions(timeline: Timeline) -> set[str]:
    """The partition paths the completed writes and table services name in their commit metadata."""
    state = _COMMITTED.get(timeline)
    added, mark = timeline.added_since(state.mark if state else None)
    if state is None or added is None:
        state = _COMMITTED[timeline] = _CommittedPartitions(mark)
        candidates: Iterable[Instant] = timeline.completed_writes()
    else:
        state.mark = mark
        candidates = [i for i in map(timeline.get, dict.fromkeys(added)) if i is not None]
    for inst in candidates:
        if inst.timestamp in state.counted or not inst.is_completed or inst.action not in WRITE_ACTIONS:
            continue
        try:
            named = timeline.commit_partitions(inst)
        except InstantVanishedError:
            continue  # rolled back or archived since the timeline was listed: it names nothing to read
        state.counted.add(inst.timestamp)
        state.partitions.update(named)
    return set(state.partitions)


def list_partitions(table: TableParts, files_kept: int | None = None) -> PartitionListing:
    """The table's partitions: folders with a metafile, and those its commits name (a folder whose
    metafile is missing still holds committed files). A table with neither is read as non-partitioned
    when it has no partition fields. `files_kept`: as find_partition_folders."""
    listing = find_partition_folders(table.storage, files_kept)
    extra = {posixpath.normpath(p) if p else "" for p in committed_partitions(table.timeline)} - set(listing.partitions)
    partitions = sorted(set(listing.partitions) | extra)
    if not partitions and not table.config.partition_fields:
        partitions = [""]
    return PartitionListing(partitions, listing.files)
