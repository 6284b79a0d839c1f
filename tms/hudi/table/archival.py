"""Archival of the active timeline, as Hudi's archiver does it: for table versions 8 and later as its
TimelineArchiverV2 (the instants' rows in the LSM timeline, lsm_writer), for table version 6 as Hudi 0.15's
HoodieTimelineArchiver (their files' records in an archive log file, archived_log; see "Table version 6" below).
Which instants leave the active timeline, their archived form written, then their files deleted.

Which instants (getCommitInstantsToArchive): nothing until the completed commits (commit, deltacommit,
replacecommit) exceed `max_commits`; then the oldest ones down to `min_commits`, but none at or after
- the earliest pending write, compaction or clustering (the last completed commit before it is kept too);
- on MERGE_ON_READ, the instant compaction scheduling still needs (the last compaction, or the delta commit
  `compaction_delta_commits` back from the latest);
- with replace commits or clusterings on the timeline: the first one at or after the earliest commit the last
  clean retains (all of them while no clean completed): a replaced file group's files are cleaned first;
- with a metadata table: the first commit that completed after the metadata table's latest compaction
  (nothing at all before the metadata table's first compaction);
- of a metadata table: its data table's first commit or pending instant;
- the first savepoint (or, with `beyond_savepoint`, only the savepointed commits themselves).
The cleaner widens both limits: at least the commits after its earliest commit to retain, plus 2, are kept.
Completed cleans and rollbacks older than the last commit archived go with them.

How (archiveIfRequired): the instants' rows are written to the LSM timeline first; then their files are deleted,
requested and inflight ones first and the completed ones last, oldest first, so that a crash midway leaves each
instant either whole or as a completed instant; then the LSM timeline's layers are compacted. Leftover markers of
the archived instants go too.

Table version 6 (Hudi 0.15's getInstantsToArchive) differs:
- completed cleans and rollbacks are archived apart from commits: per action, once more than the max limit of them
  are on the active timeline, the oldest down to the min limit;
- on MERGE_ON_READ, the delta commits compaction scheduling counts are the ones with later instant times than the
  last compaction (any state); with replace commits, also the last completed commit before the first inflight one;
- with a metadata table, nothing (cleans and rollbacks included) at or after the metadata table's latest compaction
  (by instant time); of a metadata table, nothing at or after its data table's first commit or pending instant;
- every file of each archived instant (requested, inflight, completed) becomes a HoodieArchivedMetaEntry record
  of a new archive log file (`hoodie.commits.archival.batch` records a block); then pending files are deleted
  first and completed ones last, oldest first. Merging small archive files (`hoodie.archive.merge.enable`, off
  by default) is not done: archival refuses a table that asks for it."""
from __future__ import annotations

import posixpath
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..config import write as write_config
from ..errors import HudiError
from ..locks.transaction import TransactionManager
from ..metadata.keys import METADATA_DIR
from ..metadata.reader import metadata_partitions
from ..timeline.archived_log import ArchivedLogWriter, meta_entry
from ..timeline.instant import Action, Instant, State, new_instant_time
from ..timeline.lsm_writer import ArchivedInstant, LSMTimelineWriter
from ..timeline.serde import parse_cleaner_plan
from ..timeline.timeline import Timeline
from .hudi_table import HudiTable

# HoodieTimeline.getCommitsTimeline (completed: getCompletedCommitsTimeline)
COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)
# getWriteTimeline: what a pending instant holds archival back for
WRITES = COMMITS + (Action.COMPACTION, Action.LOG_COMPACTION)
_REPLACES = (Action.REPLACE_COMMIT, Action.CLUSTERING)
MARKERS_DIR = ".hoodie/.temp"


@dataclass(frozen=True)
class ArchivalSettings:
    """Hudi's archival configuration of one table (its writers' `hoodie.*` settings)."""
    min_commits: int = write_config.KEEP_MIN_COMMITS.default
    max_commits: int = write_config.KEEP_MAX_COMMITS.default
    compaction_batch_size: int = write_config.TIMELINE_COMPACTION_BATCH_SIZE.default
    beyond_savepoint: bool = write_config.ARCHIVE_BEYOND_SAVEPOINT.default
    # MERGE_ON_READ with compaction triggered by commits: hoodie.compact.inline.max.delta.commits; None otherwise
    compaction_delta_commits: int | None = write_config.COMPACTION_MAX_DELTA_COMMITS.default
    metadata_enabled: bool = write_config.METADATA_ENABLED.default
    archival_batch_size: int = write_config.ARCHIVAL_BATCH_SIZE.default  # table version 6: records a block
    merge_small_files: bool = write_config.ARCHIVE_MERGE_ENABLED.default  # table version 6

    def __post_init__(self) -> None:
        if self.min_commits < 1 or self.max_commits <= self.min_commits:
            raise HudiError(f"hoodie.keep.max.commits ({self.max_commits}) must be greater than "
                            f"hoodie.keep.min.commits ({self.min_commits}), which must be at least 1")

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ArchivalSettings:
        """The settings Hudi's writer reads from these `hoodie.*` options (its defaults for the ones absent)."""
        trigger = write_config.COMPACTION_TRIGGER_STRATEGY.value(options).upper()
        return cls(min_commits=write_config.KEEP_MIN_COMMITS.value(options),
                   max_commits=write_config.KEEP_MAX_COMMITS.value(options),
                   compaction_batch_size=write_config.TIMELINE_COMPACTION_BATCH_SIZE.value(options),
                   beyond_savepoint=write_config.ARCHIVE_BEYOND_SAVEPOINT.value(options),
                   compaction_delta_commits=write_config.COMPACTION_MAX_DELTA_COMMITS.value(options)
                   if trigger in ("NUM_COMMITS", "NUM_AND_TIME") else None,
                   metadata_enabled=write_config.METADATA_ENABLED.value(options),
                   archival_batch_size=write_config.ARCHIVAL_BATCH_SIZE.value(options),
                   merge_small_files=write_config.ARCHIVE_MERGE_ENABLED.value(options))

    def for_metadata_table(self, options: Mapping[str, str]) -> ArchivalSettings:
        """The settings of the metadata table's own archival, as Hudi's metadata writer derives them from its data
        table's (HoodieMetadataWriteUtils): the larger of `hoodie.metadata.keep.{min,max}.commits` and the data
        table's limits, compaction every `hoodie.metadata.compact.max.delta.commits`."""
        return ArchivalSettings(
            min_commits=max(write_config.METADATA_KEEP_MIN_COMMITS.value(options), self.min_commits),
            max_commits=max(write_config.METADATA_KEEP_MAX_COMMITS.value(options), self.max_commits),
            compaction_batch_size=self.compaction_batch_size, beyond_savepoint=self.beyond_savepoint,
            compaction_delta_commits=write_config.METADATA_COMPACT_MAX_DELTA_COMMITS.value(options),
            metadata_enabled=False, archival_batch_size=self.archival_batch_size,
            merge_small_files=self.merge_small_files)


@dataclass
class ArchivalResult:
    archived: list[str] = field(default_factory=list)  # instant times, ascending
    file: str | None = None                              # the LSM timeline file written
    compacted: list[str] = field(default_factory=list)   # files the LSM compaction wrote


def _completed_commits(tl: Timeline) -> list[Instant]:
    return [i for i in tl.iter_instants(COMMITS) if i.is_completed]


def limits(tl: Timeline, settings: ArchivalSettings, cleaner_retains_from: str | None) -> tuple[int, int]:
    """(min, max) commits to keep (ArchivalUtils.getMinAndMaxInstantsToKeep): the configured ones, widened when
    the cleaner's earliest commit to retain (`cleaner_retains_from`, by its current policy) needs more."""
    lo, hi = settings.min_commits, settings.max_commits
    if cleaner_retains_from is not None:
        by_cleaning = sum(1 for i in _completed_commits(tl) if i.timestamp > cleaner_retains_from) + 2
        if lo < by_cleaning:
            return by_cleaning, by_cleaning + hi - lo
    return lo, hi


def _retained_for_pending(tl: Timeline, completed: list[Instant]) -> str | None:
    pending = next((i for i in tl.pending(WRITES)), None)
    if pending is None:
        return None
    before = [i for i in completed if i.timestamp < pending.timestamp]
    return before[-1].timestamp if before else pending.timestamp


def _retained_for_compaction(tl: Timeline, max_delta_commits: int) -> str | None:
    """CompactionUtils.getEarliestInstantToRetainForCompaction."""
    last = next((i for i in tl.iter_instants((Action.COMMIT, Action.REPLACE_COMMIT), reverse=True)
                 if i.is_completed), None)
    deltas = list(tl.iter_instants((Action.DELTA_COMMIT,)))
    if last is not None:
        since = [i for i in deltas if i.completion_time and i.completion_time > last.timestamp
                 and i.timestamp != last.timestamp]
        anchor = last.timestamp
    elif deltas:
        since, anchor = deltas, deltas[0].timestamp
    else:
        return None
    if len(since) < max_delta_commits:
        return anchor
    return since[len(since) - max_delta_commits].timestamp


def _retained_for_clustering(tl: Timeline) -> str | None:
    """ClusteringUtils.getEarliestInstantToRetainForClustering: the first replace commit or clustering (in any
    state) at or after the earliest commit the last completed clean's plan retains."""
    replaces = list(tl.iter_instants(_REPLACES))
    if not replaces:
        return None
    clean = tl.last_of((Action.CLEAN,), completed=True)
    if clean is None:
        return replaces[0].timestamp
    retain = clean.timestamp
    try:
        earliest = parse_cleaner_plan(tl.read_plan(clean.timestamp)).earliest_instant_to_retain
    except HudiError:
        earliest = None
    if earliest is not None and earliest.timestamp:
        retain = earliest.timestamp
    return next((i.timestamp for i in replaces if i.timestamp >= retain), None)


def metadata_table_compaction(table: HudiTable) -> str | None:
    """The instant time of the metadata table's latest compaction (its latest completed commit)."""
    mdt = HudiTable.load(posixpath.join(table.base_path, METADATA_DIR), context=table.context)
    last = mdt.timeline.last_of((Action.COMMIT, Action.REPLACE_COMMIT), completed=True)
    return None if last is None else last.timestamp


def _retained_for_data_table(data: Timeline, beyond_savepoint: bool) -> str | None:
    """TimelineUtils.getEarliestInstantForMetadataArchival: a metadata table keeps what its data table's active
    timeline starts with (its first commit, in any state) and any data instant still pending."""
    savepointed = {s.timestamp for s in data.savepoints()} if beyond_savepoint else set()
    first = next((i.timestamp for i in data.iter_instants(COMMITS) if i.timestamp not in savepointed), None)
    pending = next((i.timestamp for i in data.pending()), None)
    return min((t for t in (first, pending) if t is not None), default=None)


def _oldest_commits(tl: Timeline, completed: list[Instant], bounds: list[str | None], beyond_savepoint: bool,
                    lo: int) -> list[str]:
    """The completed commits before the earliest of `bounds` and the first savepoint (with `beyond_savepoint`: all
    but the savepointed ones), at most all but `lo` of them."""
    earliest = min((b for b in bounds if b is not None), default=None)
    savepoints = [s.timestamp for s in tl.savepoints()]
    chosen = []
    for inst in completed:
        if beyond_savepoint:
            if inst.timestamp in savepoints:
                continue
        elif savepoints and inst.timestamp >= savepoints[0]:
            continue
        if earliest is not None and inst.timestamp >= earliest:
            continue
        chosen.append(inst.timestamp)
    return chosen[:max(0, len(completed) - lo)]


def instants_to_archive(table: HudiTable, settings: ArchivalSettings, *, cleaner_retains_from: str | None = None,
                        data_table: HudiTable | None = None) -> list[str]:
    """The instant times Hudi's archiver would archive now, ascending. `cleaner_retains_from`: the earliest
    commit the cleaner's policy retains (CleanerUtils.getEarliestCommitToRetain), if any; `data_table`: when
    `table` is a metadata table, its data table."""
    if table.config.version == 6:
        return _instants_to_archive_v6(table, settings, cleaner_retains_from, data_table)
    if not table.config.traits.completion_times:
        raise HudiError(f"archival of table version {table.config.version} is not supported: TMS archives "
                        f"versions 6, 8 and 9")
    tl = table.timeline
    completed = _completed_commits(tl)
    lo, hi = limits(tl, settings, cleaner_retains_from)
    if len(completed) <= hi:
        return []
    bounds = [_retained_for_pending(tl, completed), _retained_for_clustering(tl)]
    if table.config.is_mor and settings.compaction_delta_commits is not None:
        bounds.append(_retained_for_compaction(tl, settings.compaction_delta_commits))
    if data_table is None and settings.metadata_enabled and metadata_partitions(table):
        compaction = metadata_table_compaction(table)
        if compaction is None:
            return []  # Hudi archives nothing before the metadata table's first compaction
        bounds.append(next((i.timestamp for i in completed if i.completion_time and i.completion_time > compaction
                            and i.timestamp != compaction), None))
    if data_table is not None:
        bounds.append(_retained_for_data_table(data_table.timeline, settings.beyond_savepoint))
    chosen = _oldest_commits(tl, completed, bounds, settings.beyond_savepoint, lo)
    if not chosen:
        return []
    last = chosen[-1]
    chosen += [i.timestamp for i in tl.iter_instants((Action.CLEAN, Action.ROLLBACK), before=last) if i.is_completed]
    return sorted(chosen)


# --- table version 6 (Hudi 0.15's HoodieTimelineArchiver) --------------------------------------------------


def _cleans_and_rollbacks_v6(tl: Timeline, lo: int, hi: int) -> list[str]:
    """getCleanInstantsToArchive: per action, the oldest completed ones down to `lo` once over `hi`."""
    chosen = []
    for action in (Action.CLEAN, Action.ROLLBACK):
        done = [i.timestamp for i in tl.iter_instants((action,)) if i.is_completed]
        if len(done) > hi:
            chosen += done[:len(done) - lo]
    return chosen


def _retained_for_compaction_v6(tl: Timeline, max_delta_commits: int) -> str | None:
    """CompactionUtils.getOldestInstantToRetainForCompaction (0.15): the delta commits (any state) with later
    instant times than the last completed commit, or all of them before any."""
    last = tl.last_of((Action.COMMIT, Action.REPLACE_COMMIT), completed=True)
    deltas = [i.timestamp for i in tl.iter_instants((Action.DELTA_COMMIT,))]
    if last is not None:
        since, anchor = [ts for ts in deltas if ts > last.timestamp], last.timestamp
    elif deltas:
        since, anchor = deltas, deltas[0]
    else:
        return None
    if len(since) < max_delta_commits:
        return anchor
    return since[len(since) - max_delta_commits]


def _retained_for_clustering_v6(tl: Timeline) -> str | None:
    """ClusteringUtils.getOldestInstantToRetainForClustering (0.15): as for later versions, or the last completed
    commit before the first inflight replace commit when that is older."""
    replaces = list(tl.iter_instants((Action.REPLACE_COMMIT,)))
    if not replaces:
        return None
    oldest = _retained_for_clustering(tl)
    inflight = next((i for i in replaces if i.state == State.INFLIGHT), None)
    if inflight is not None:
        before = next((i.timestamp for i in tl.iter_instants(COMMITS, before=inflight.timestamp, reverse=True)
                       if i.is_completed), None)
        if before is not None and (oldest is None or before < oldest):
            oldest = before
    return oldest


def _commits_v6(table: HudiTable, settings: ArchivalSettings, completed: list[Instant], lo: int) -> list[str]:
    tl = table.timeline
    bounds = [_retained_for_pending(tl, completed), _retained_for_clustering_v6(tl)]
    if table.config.is_mor and settings.compaction_delta_commits is not None:
        bounds.append(_retained_for_compaction_v6(tl, settings.compaction_delta_commits))
    return _oldest_commits(tl, completed, bounds, settings.beyond_savepoint, lo)


def _instants_to_archive_v6(table: HudiTable, settings: ArchivalSettings, cleaner_retains_from: str | None,
                            data_table: HudiTable | None) -> list[str]:
    tl = table.timeline
    completed = _completed_commits(tl)
    lo, hi = limits(tl, settings, cleaner_retains_from)
    chosen = _cleans_and_rollbacks_v6(tl, lo, hi)
    if len(completed) > hi:
        chosen += _commits_v6(table, settings, completed, lo)
    if data_table is None and settings.metadata_enabled and metadata_partitions(table):
        compaction = metadata_table_compaction(table)
        if compaction is None:
            return []  # Hudi archives nothing before the metadata table's first compaction
        chosen = [ts for ts in chosen if ts < compaction]
    if data_table is not None:
        earliest = _retained_for_data_table(data_table.timeline, settings.beyond_savepoint)
        if earliest is not None:
            chosen = [ts for ts in chosen if ts < earliest]
    return sorted(chosen)


def _archive_v6(table: HudiTable, settings: ArchivalSettings, chosen: list[str]) -> ArchivalResult:
    """Each file of the chosen instants as a record of a new archive file; then the files deleted, pending ones
    first, completed ones last and oldest first."""
    tl, zone = table.timeline, table.config.timeline_zone
    files = [states[s] for states in (tl.states_of(ts) for ts in chosen)
             for s in (State.REQUESTED, State.INFLIGHT, State.COMPLETED) if s in states]
    entries = []
    for ts in chosen:
        table.storage.delete_tree(posixpath.join(MARKERS_DIR, ts))
    for inst in files:
        mtime = table.storage.info(tl.path_of(inst)).mtime
        written = new_instant_time(zone, datetime.fromtimestamp(mtime, UTC)) if mtime else None
        entries.append(meta_entry(inst.timestamp, inst.action, inst.state, written, tl.read(inst)))
    result = ArchivalResult()
    result.file = ArchivedLogWriter(table.storage, table.config.archive_dir, settings.archival_batch_size).write(
        entries)
    for inst in sorted((i for i in files if i.state != State.COMPLETED), key=lambda i: (i.timestamp, i.state)):
        table.storage.delete(tl.path_of(inst))
    for inst in files:
        if inst.state == State.COMPLETED:
            table.storage.delete(tl.path_of(inst))
    tl.reload(force=True, full=True)
    result.archived = chosen
    return result


def _row(tl: Timeline, states: dict[State, Instant]) -> ArchivedInstant:
    """MetadataConversionUtils.createLSMTimelineInstant: the completed file's bytes, and the plan of an action
    that has one (a clean's requested file, or its inflight one without it; a compaction's or log compaction's
    requested file; a replace commit's or clustering's requested file, or its inflight file when not empty)."""
    done = states[State.COMPLETED]
    metadata = tl.read(done) or None
    pending = states.get(State.REQUESTED) or states.get(State.INFLIGHT)
    plan = None
    if pending is not None:
        action = pending.action
        requested = states.get(State.REQUESTED)
        if action == Action.CLEAN:  # the cleaner plan, from the earliest pending file there is
            plan = tl.read(pending) or None
        elif action in (Action.COMPACTION, Action.LOG_COMPACTION, *_REPLACES) and requested is not None:
            plan = tl.read(requested) or None
        inflight = states.get(State.INFLIGHT)
        if action in _REPLACES and inflight is not None:
            plan = tl.read(inflight) or plan
    return ArchivedInstant(done.timestamp, done.completion_time, done.action, metadata, plan)


def archive(table: HudiTable, settings: ArchivalSettings, *, cleaner_retains_from: str | None = None,
            data_table: HudiTable | None = None, transactions: TransactionManager | None = None) -> ArchivalResult:
    """Archive what Hudi's rules allow now (see instants_to_archive), inside `transactions`' transaction (the
    table's lock, as Hudi's archiver takes it, when the table has several writers)."""
    if table.config.version == 6 and settings.merge_small_files:
        raise HudiError("hoodie.archive.merge.enable=true: TMS does not merge small archive files of table "
                        "version 6; archive this table with it off (Hudi's default)")
    with transactions.transaction(exact_view=True) if transactions is not None else nullcontext():
        return _archive(table, settings, cleaner_retains_from, data_table)


def _archive(table: HudiTable, settings: ArchivalSettings, cleaner_retains_from: str | None,
             data_table: HudiTable | None) -> ArchivalResult:
    tl = table.timeline
    tl.reload(force=True, full=True)
    chosen = instants_to_archive(table, settings, cleaner_retains_from=cleaner_retains_from, data_table=data_table)
    if not chosen:
        return ArchivalResult()
    if table.config.version == 6:
        return _archive_v6(table, settings, chosen)
    result = ArchivalResult()
    actions = [tl.states_of(ts) for ts in chosen]
    writer = LSMTimelineWriter(table.storage, tl.dir, settings.compaction_batch_size)
    rows = []
    for states in actions:
        done = states[State.COMPLETED]
        table.storage.delete_tree(posixpath.join(MARKERS_DIR, done.timestamp))
        rows.append(_row(tl, states))
    result.file = writer.write(rows)
    for state in (State.REQUESTED, State.INFLIGHT):
        for states in actions:
            if state in states:
                table.storage.delete(tl.path_of(states[state]))
    for states in actions:
        table.storage.delete(tl.path_of(states[State.COMPLETED]))
    tl.reload(force=True, full=True)
    result.archived = chosen
    result.compacted = writer.compact_and_clean()
    return result

