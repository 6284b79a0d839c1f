"""Orphan files: data files in a table's partitions that no instant references (neither completed nor pending
on the timeline), older than a safety window: leftovers of failed writes without markers, crashed copies.

Only what can be told exactly is reported. An instant older than the active timeline's first one may have
been archived (TMS does not read the archive), so a file written by such an instant is never taken for an
orphan; a file younger than the window may belong to a write whose instant file is not visible yet."""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..metadata.listing import data_partitions, file_instant
from ..storage.table_storage import FileInfo
from .hudi_table import HudiTable


@dataclass(frozen=True)
class Orphan:
    path: str      # relative to the base path
    size: int
    instant: str   # the instant its name says wrote it
    mtime: float


def unreferenced_files(table: HudiTable, listed: Mapping[str, Sequence[FileInfo]] | None = None
                       ) -> Iterator[tuple[FileInfo, str]]:
    """Every data file whose instant (as its name says) is neither completed nor pending on the active timeline
    nor archived (older than where the active timeline starts, as Hudi's containsOrBeforeTimelineStarts reads
    it), with that instant; orphans or not (`tms verify` reports them all). `listed`: only these partitions,
    as already listed (partition -> its entries), else every partition of the table."""
    tl = table.timeline
    start = tl.start()
    parts = listed.values() if listed is not None else (table.storage.listdir(p) for p in data_partitions(table))
    for entries in parts:
        for e in entries:
            if e.is_dir:
                continue
            ts = file_instant(e.name)
            if ts is not None and not tl.states_of(ts) and (start is None or ts > start):
                yield e, ts


def find_orphans(table: HudiTable, *, now: float, safety_seconds: float,
                 listed: Mapping[str, Sequence[FileInfo]] | None = None) -> list[Orphan]:
    """The orphan files older than `safety_seconds` at `now` (epoch seconds); `listed`: of these partitions'
    listings only (unreferenced_files)."""
    instants = table.timeline.instants()
    if not instants:
        return []
    first = min(i.timestamp for i in instants)
    return [Orphan(e.path, e.size, ts, e.mtime) for e, ts in unreferenced_files(table, listed)
            if ts > first and e.mtime is not None and now - e.mtime >= safety_seconds]


def remove_orphans(table: HudiTable, orphans: list[Orphan], *, now: float, safety_seconds: float) -> list[Orphan]:
    """Delete those of `orphans` that are orphans still (found again now, under the same rule): the ones
    deleted. A file an instant references by now, or that changed, is left alone."""
    still = {(o.path, o.size, o.mtime) for o in find_orphans(table, now=now, safety_seconds=safety_seconds)}
    removed = []
    for orphan in orphans:
        if (orphan.path, orphan.size, orphan.mtime) in still and table.storage.delete(orphan.path):
            removed.append(orphan)
    return removed
