"""A table's partitions, found as Hudi finds them: the folders that hold a partition metafile
(`.hoodie_partition_metadata`, or `.hoodie_partition_metadata.<format>` when the writer used the base
file format for it), and the partition paths the completed commits name.

The number of partition fields says nothing about the depth: a time-based key generator writes one field
as several folder levels (`2024/01/15/10`), a custom one mixes levels, and values may be URL-encoded.
Like Java's file-system-backed listing, a folder holding a metafile is a partition and is not searched
further; other folders are searched level by level (`.hoodie` and hidden folders excluded)."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from .errors import InstantVanishedError
from .parts import TableParts
from .storage import FileInfo, Storage
from .timeline import Timeline

PARTITION_METAFILE = ".hoodie_partition_metadata"


@dataclass
class PartitionListing:
    """The partitions found, with the listing of each one taken while searching (so the file-system view
    does not list a partition twice)."""
    partitions: list[str]
    files: dict[str, list[FileInfo]] = field(default_factory=dict)


def is_partition_metafile(name: str) -> bool:
    return name == PARTITION_METAFILE or name.startswith(PARTITION_METAFILE + ".")


def find_partition_folders(storage: Storage) -> PartitionListing:
    """Every folder under the base path holding a partition metafile ('' for the base path itself)."""
    found: dict[str, list[FileInfo]] = {}
    level = [""]
    while level:
        next_level: list[str] = []
        for rel in level:
            entries = storage.listdir(rel)
            if any(not e.is_dir and is_partition_metafile(e.name) for e in entries):
                found[rel] = entries
                continue
            next_level.extend(e.path for e in entries if e.is_dir and not e.name.startswith("."))
        level = next_level
    return PartitionListing(sorted(found), found)


# timeline -> {(instant time, action): partitions its commit metadata names}. A completed instant's file never
# changes, so each is parsed once per loaded timeline (the planner keeps timelines loaded between passes).
_PARTITIONS_OF_COMMIT: WeakKeyDictionary[Timeline, dict[tuple[str, str], frozenset[str]]] = WeakKeyDictionary()


def committed_partitions(timeline: Timeline) -> set[str]:
    """The partition paths the completed writes and table services name in their commit metadata."""
    known = _PARTITIONS_OF_COMMIT.setdefault(timeline, {})
    out: set[str] = set()
    for inst in timeline.completed_writes():
        key = (inst.timestamp, inst.action)
        partitions = known.get(key)
        if partitions is None:
            try:
                meta = timeline.commit_metadata(inst)
            except InstantVanishedError:
                continue  # rolled back or archived since the timeline was listed: it names nothing to read
            partitions = known[key] = frozenset(
                [p or "" for p in meta.partition_to_write_stats]
                + [p or "" for p in (meta.partition_to_replace_file_ids or {})])
        out |= partitions
    return out


def list_partitions(table: TableParts) -> PartitionListing:
    """The table's partitions: folders with a metafile, and those its commits name (a folder whose
    metafile is missing still holds committed files). A table with neither is read as non-partitioned
    when it has no partition fields."""
    listing = find_partition_folders(table.storage)
    extra = {posixpath.normpath(p) if p else "" for p in committed_partitions(table.timeline)} - set(listing.files)
    partitions = sorted(set(listing.partitions) | extra)
    if not partitions and not table.config.partition_fields:
        partitions = [""]
    return PartitionListing(partitions, listing.files)
