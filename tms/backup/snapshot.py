"""Which files a backup version holds: the table as its timeline stood at one moment.

The timeline is read first, the files listed after: every file of an instant completed by then was written
before its instant completed, so the listing holds it (unless a clean deleted it meanwhile: the copy checks).
Data files of instants not completed then (inflight or failed writes) are left out; a log file is taken at
its listed size, so blocks appended later are not copied. The metadata table (`.hoodie/metadata`) is left
out: a restored copy is listed by its readers, and its next writer rebuilds the metadata table."""
from __future__ import annotations

from dataclasses import dataclass

from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.storage.table_storage import FileInfo, walk_files
from tms.hudi.table.hudi_table import PROPERTIES, HudiTable
from tms.hudi.timeline.instant import Action, State

from .errors import BackupError

DELETING_ACTIONS = (Action.CLEAN, Action.RESTORE)
# Folders under .hoodie a copy does without: the metadata table, writers' scratch, heartbeats, locks.
SKIPPED_META = (".hoodie/metadata", ".hoodie/.temp", ".hoodie/.aux", ".hoodie/.heartbeat", ".hoodie/.locks",
                ".hoodie/lock")


@dataclass(frozen=True)
class TableSnapshot:
    instant: str                 # the last completed instant (by instant time) of the snapshot
    files: dict[str, int]        # table-relative path -> size to copy
    timeline_files: int
    data_files: int
    instants: frozenset[str]     # every instant time on the timeline then (any state)


def take_snapshot(table: HudiTable) -> TableSnapshot:
    """The files a version of `table` holds now; BackupError if nothing was ever completed on it."""
    timeline = table.timeline
    timeline.reload(full=True)
    instants = timeline.all_files()
    completed = {i.timestamp for i in instants if i.state is State.COMPLETED}
    if not completed:
        raise BackupError(f"table {table.name} has no completed instant to back up")
    last = max(completed)
    earliest_active = min(i.timestamp for i in instants)
    timeline_paths = {timeline.path_of(i) for i in instants}
    pending_compactions = {i.timestamp for i in timeline.pending_compactions()}
    v8 = table.config.traits.log_files_named_by_writer

    def visible(ts: str) -> bool:  # archived instants are completed ones
        return ts in completed or ts < earliest_active

    files: dict[str, int] = {}
    timeline_files = data_files = 0
    for info in walk_files(table.storage, skip=_skipped):  # the metadata table's many files not listed
        rel = info.path
        if rel.startswith(".hoodie/"):
            if rel == PROPERTIES or _keeps_meta(rel, timeline.dir, timeline_paths):
                files[rel] = info.size
                timeline_files += 1
            continue
        if _keeps_data(info, visible, pending_compactions, v8):
            files[rel] = info.size
            data_files += 1
    if PROPERTIES not in files:
        raise BackupError(f"{table.base_path} has no {PROPERTIES}")
    return TableSnapshot(last, files, timeline_files, data_files, frozenset(i.timestamp for i in instants))


def _skipped(rel: str) -> bool:
    return any(rel == s or rel.startswith(s + "/") for s in SKIPPED_META)


def _keeps_meta(rel: str, timeline_dir: str, timeline_paths: set[str]) -> bool:
    """Instant files: those the snapshot's timeline held; everything else under .hoodie (the archived
    timeline, schema history, hoodie.properties.backup) as it is."""
    folder, _, _ = rel.rpartition("/")
    if folder == timeline_dir and rel != PROPERTIES and not rel.endswith(".backup"):
        return rel in timeline_paths
    return True


def _keeps_data(info: FileInfo, visible, pending_compactions: set[str], v8: bool) -> bool:
    base = BaseFileName.parse(info.name)
    if base is not None:
        return bool(visible(base.instant))
    log = LogFileName.parse(info.name)
    if log is not None:  # v8+: the delta commit that wrote it; v6: its slice's base instant
        return bool(visible(log.instant) or (not v8 and log.instant in pending_compactions))
    return True  # partition metadata and the like


def deletions_since(table: HudiTable, snapshot: TableSnapshot) -> list[str]:
    """Cleans and restores started since `snapshot` (they may delete files the snapshot holds): the copy
    cannot vouch for the version then."""
    table.timeline.reload(full=True)
    return [f"{i.action} {i.timestamp}" for i in table.timeline.pending(DELETING_ACTIONS)
            + table.timeline.completed(DELETING_ACTIONS) if i.timestamp not in snapshot.instants]
