"""Which partitions a clean plan looks at, as Hudi's CleanPlanner chooses them, and where a clean that stopped
at its size bound (`tms.clean.max.files.per.plan`) continues.

- Incremental (`hoodie.cleaner.incremental.mode`, default true; KEEP_LATEST_COMMITS and KEEP_LATEST_BY_HOURS):
  the partitions the completed commits between the last clean's earliest commit to retain (inclusive) and the
  new one (exclusive) wrote or replaced in, and those of the commits whose savepoints were deleted since the last
  clean (it records the savepoints it saw under Hudi's `savepointed_timestamps`). A partition no commit of that
  window touched has no slice that became deletable since the last clean.
- Full: every partition of the table (no completed clean, its earliest commit to retain archived, incremental
  mode off, or KEEP_LATEST_FILE_VERSIONS).
- Continued: a plan that stopped at its bound records the partition it stopped in; the next plan keeps the
  same earliest commit to retain and looks at the same window's partitions from that one on (those before it
  are done), so that the plans together delete what one unbounded plan would."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tms.hudi.fs_view.partitions import list_partitions
from tms.hudi.fs_view.view import FILES_KEPT
from tms.hudi.storage.table_storage import FileInfo
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant
from tms.hudi.timeline.serde import parse_clean_retention
from tms.hudi.timeline.timeline import WRITE_ACTIONS

# Hudi's key (CleanPlanner.SAVEPOINTED_TIMESTAMPS): the savepoints a clean saw, comma-separated
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
# TMS's keys of a clean that stopped at its bound: the partition to continue from, and the window start its
# partitions came from ("" for all of the table's partitions)
RESUME_FROM = "tms.clean.resume.from"
WINDOW_START = "tms.clean.window.start"


@dataclass(frozen=True)
class LastClean:
    """What the next clean plan reads of the last completed clean."""
    earliest_commit_to_retain: str
    extra_metadata: dict[str, str]


@dataclass
class CleanScope:
    """The partitions to look at, sorted, and what the plan records about them."""
    partitions: list[str]
    window_start: str  # "" for every partition of the table
    listed: dict[str, list[FileInfo]] = field(default_factory=dict)  # listings a full scan took on its way


def last_clean(table: HudiTable) -> LastClean | None:
    inst = table.timeline.last_of((Action.CLEAN,), completed=True)
    if inst is None:
        return None
    data = table.timeline.read(inst)
    return LastClean(*parse_clean_retention(data)) if data.strip() else None  # an empty clean: as if none


def savepointed_timestamps(table: HudiTable) -> str:
    return ",".join(i.timestamp for i in table.timeline.savepoints())


def full_scope(table: HudiTable) -> CleanScope:
    listing = list_partitions(table, files_kept=FILES_KEPT)  # the others are listed a chunk at a time
    return CleanScope(listing.partitions, "", listing.files)


def continued_scope(table: HudiTable, last: LastClean) -> CleanScope | None:
    """The rest of a clean that stopped at its bound; None if the last clean did not stop or its window can
    no longer be read (a commit of it archived)."""
    extra = last.extra_metadata
    if RESUME_FROM not in extra:
        return None
    resume, start = extra[RESUME_FROM], extra.get(WINDOW_START, "")
    if not start:
        scope = full_scope(table)
    else:
        partitions = _window_partitions(table, start, last.earliest_commit_to_retain, extra)
        if partitions is None:
            return None
        scope = CleanScope(sorted(partitions), start)
    scope.partitions = [p for p in scope.partitions if p >= resume]
    return scope


def incremental_scope(table: HudiTable, since: str, earliest: Instant, last: LastClean) -> CleanScope | None:
    """Hudi's incremental partitions: those of the commits from `since` (where the last clean cleaned up to)
    to `earliest`; None where a full scan is needed."""
    partitions = _window_partitions(table, since, earliest.timestamp, last.extra_metadata or {})
    return None if partitions is None else CleanScope(sorted(partitions), since)


def _window_partitions(table: HudiTable, start: str, end: str, extra: dict[str, str]) -> set[str] | None:
    """Partitions written or replaced in by the completed commits from `start` to `end` (exclusive), and by
    the commits whose savepoints were deleted since `extra`'s clean; None if part of it was archived."""
    tl = table.timeline
    first = next(tl.iter_instants(WRITE_ACTIONS), None)
    if first is None or start < first.timestamp:
        return None  # Hudi's isBeforeTimelineStarts: the window's start was archived
    commits: list[Instant] = [i for i in tl.iter_instants(WRITE_ACTIONS, since=start, before=end) if i.is_completed]
    now_savepointed = {i.timestamp for i in tl.savepoints()}
    for ts in (extra.get(SAVEPOINTED_TIMESTAMPS) or "").split(","):
        if ts and ts not in now_savepointed:
            inst = tl.get(ts)
            if inst is None or not inst.is_completed:
                return None  # its commit archived: which partitions it kept is unknown
            commits.append(inst)
    return set(_partitions_of(table, commits))


def _partitions_of(table: HudiTable, commits: Iterable[Instant]) -> Iterable[str]:
    for inst in commits:
        yield from table.timeline.commit_partitions(inst)
