"""Cleaner plans, as Hudi's CleanPlanner makes them: `<T>.clean.requested` (HoodieCleanerPlan v2).

- KEEP_LATEST_COMMITS: the earliest instant to retain is the `commits.retained`-th last completed write
  (never later than the earliest pending one); per file group, slices older than it go, except the
  latest slice and the last slice before it (a query of the retained window may still read it).
- KEEP_LATEST_BY_HOURS: the earliest instant to retain is the first completed write of the last
  `hours.retained` hours; slices older than it go, except the latest and the last slice before it, as
  KEEP_LATEST_COMMITS (Hudi's CleanPlanner runs the same rule for both; its docs leave out the slice before).
- KEEP_LATEST_FILE_VERSIONS: per file group, the newest `fileversions.retained` slices stay.
File groups replaced by a completed replace commit go whole (under the first two policies once the replace
commit is older than the earliest instant to retain).

Never deleted, whatever the policy: a latest slice; a slice a pending compaction needs (its base slice and
newer); the slice each pending instant (write, compaction, clustering) works from (the newest one older than
it); the slice each savepoint keeps; anything at or after the earliest instant to retain. A replaced file
group is read by no pending instant newer than its replace (as in Hudi's CleanPlanner, only savepoints keep
its slices): a writer that always has a commit in flight does not keep replaced groups forever."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from typing import Any, Literal

from tms.hudi.fs_view.partitions import PartitionListing
from tms.hudi.fs_view.view import FileGroup, FileSlice, FileSystemView, chunked_views
from tms.hudi.storage.paths import join
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, new_instant_time
from tms.hudi.timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    parse_compaction_plan,
    serialize_cleaner_plan,
)
from tms.hudi.timeline.timeline import WRITE_ACTIONS, Timeline
from tms.table_service import TableService

from .clean_partitions import (
    RESUME_FROM,
    SAVEPOINTED_TIMESTAMPS,
    WINDOW_START,
    CleanScope,
    LastClean,
    continued_scope,
    full_scope,
    incremental_scope,
    last_clean,
    savepointed_timestamps,
)
from .planned import Planned
from .policy import CleanerPolicy, TablePolicy
from .stats import clean_stats_of

# CleanerUtils.getEarliestCommitToRetain looks at the commits-and-compaction timeline.
_RETAINED_ACTIONS = {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION,
                     Action.LOG_COMPACTION, Action.CLUSTERING}


def earliest_instant_to_retain(table: HudiTable, policy: TablePolicy, now: datetime) -> Instant | None:
    """Hudi's earliest commit to retain, found from the timeline's end: it costs the commits retained,
    not the timeline's length."""
    tl = table.timeline
    if policy.cleaner_policy is CleanerPolicy.KEEP_LATEST_COMMITS:
        retained = policy.cleaner_commits_retained
        newest = list(islice(_completed(tl, reverse=True), retained + 1))
        if len(newest) <= retained:
            return None
        nth = newest[retained - 1]
        pending = tl.pending(_RETAINED_ACTIONS)
        if pending and nth.timestamp > pending[0].timestamp:  # never past the earliest pending write
            return next(_completed(tl, before=pending[0].timestamp, reverse=True), None)
        return nth
    if policy.cleaner_policy is CleanerPolicy.KEEP_LATEST_BY_HOURS:
        cutoff = new_instant_time(table.config.timeline_zone, now - timedelta(hours=policy.cleaner_hours_retained))
        return next(_completed(tl, since=cutoff), None)
    return None


def _completed(tl: Timeline, **bounds: Any) -> Iterator[Instant]:
    return (i for i in tl.iter_instants(_RETAINED_ACTIONS, **bounds) if i.is_completed)


def _slice_needed_by(group: FileGroup, timestamp: str, inclusive: bool) -> str | None:
    """The slice a reader or writer at `timestamp` works from: the newest one older than it."""
    older = [s for s in group.slices if (s.base_instant <= timestamp if inclusive else s.base_instant < timestamp)]
    return older[-1].base_instant if older else None


class _Guard:
    """The slices no policy may delete, besides each group's latest."""

    def __init__(self, table: HudiTable):
        tl = table.timeline
        self.compaction_bases = {}  # (partition, fileId) -> base instant of the pending operation
        for inst in tl.pending((Action.COMPACTION,)):
            for op in parse_compaction_plan(tl.read_plan(inst.timestamp)).operations:
                self.compaction_bases[(op.partition_path or "", op.file_id)] = op.base_instant_time
        self.pending = [i.timestamp for i in tl.pending() if i.action in _RETAINED_ACTIONS]
        self.savepoints = [i.timestamp for i in tl.savepoints()]

    def needed_for_compaction(self, group: FileGroup, fs: FileSlice) -> bool:
        base = self.compaction_bases.get((group.partition, group.file_id))
        return base is not None and fs.base_instant >= base

    def protected(self, group: FileGroup) -> set[str]:
        keep = {_slice_needed_by(group, ts, inclusive=False) for ts in self.pending}
        keep |= {fs.base_instant for fs in group.slices if self.needed_for_compaction(group, fs)}
        return {ts for ts in keep if ts is not None} | self.savepointed(group)  # None: no slice that old

    def savepointed(self, group: FileGroup) -> set[str]:
        """The slices savepoints keep: all a replaced file group keeps. A pending instant newer than the
        replace does not read a replaced group, and one older holds the earliest instant to retain before it."""
        keep = {_slice_needed_by(group, ts, inclusive=True) for ts in self.savepoints}
        return {ts for ts in keep if ts is not None}


def _deletable_by_commits(group: FileGroup, earliest: str, protected: set[str]) -> list[FileSlice]:
    """KEEP_LATEST_COMMITS and KEEP_LATEST_BY_HOURS: slices older than `earliest`, but the latest and the last one
    before `earliest` (a reader of the retained window may still read it). Keeping that one also makes a slice
    cleanable only once a newer slice is older than `earliest`: incremental cleaning finds it in the window."""
    newest_first = list(reversed(group.slices))
    latest = newest_first[0].base_instant
    before_earliest = next((s.base_instant for s in newest_first if s.base_instant < earliest), None)
    keep: set[str | None] = {latest, before_earliest, *protected}
    return [s for s in newest_first if s.base_instant not in keep and s.base_instant < earliest]


def _deletable_by_versions(group: FileGroup, retained: int, guard: _Guard, protected: set[str]) -> list[FileSlice]:
    candidates = [s for s in reversed(group.slices) if not guard.needed_for_compaction(group, s)]
    if (group.partition, group.file_id) in guard.compaction_bases:
        retained -= 1  # the pending compaction's slices count as one kept version
    return [s for s in candidates[max(retained, 0):] if s.base_instant not in protected]


def _files_of(fs: FileSlice) -> list[tuple[str, int]]:
    """The slice's files: (path, bytes)."""
    return ([(fs.base_file.path, fs.base_file.size)] if fs.base_file else []) + [(f.path, f.size) for f in fs.log_files]


def plan_clean(table: HudiTable, policy: TablePolicy, now: datetime) -> Planned | None:
    """Plan a clean if the policy finds files to delete; None otherwise, or while a clean is pending."""
    planned = plan_clean_or_why(table, policy, now)
    return planned if isinstance(planned, Planned) else None


def plan_clean_or_why(table: HudiTable, policy: TablePolicy, now: datetime) -> Planned | str:
    """plan_clean, or in one line why there is nothing to clean (the planner keeps it for the table's page)."""
    tl = table.timeline
    tl.reload()
    if pending := tl.pending((Action.CLEAN,)):
        return f"a clean ({pending[0].timestamp}) is still pending"
    rule = policy.cleaner_policy
    earliest = earliest_instant_to_retain(table, policy, now)
    last = last_clean(table)
    stopped = last is not None and RESUME_FROM in last.extra_metadata
    since = last.earliest_commit_to_retain if last is not None and not stopped else ""
    if last is not None and stopped and (kept := _continued_earliest(table, last, rule, earliest)) is not False:
        scope = continued_scope(table, last)
        if scope is not None:
            found = _doomed(table, policy, kept, scope, _Guard(table))
            if found.files:
                return _write_plan(table, rule, kept, scope, found)
            since = kept.timestamp if kept else ""  # the stopped clean is done: it cleaned up to `kept`
    if earliest is None and rule is CleanerPolicy.KEEP_LATEST_COMMITS:
        return (f"nothing to clean yet: no more completed commits than the {policy.cleaner_commits_retained} "
                f"retained (hoodie.cleaner.commits.retained), before any pending instant")
    if earliest is None and rule is CleanerPolicy.KEEP_LATEST_BY_HOURS:
        return (f"nothing to clean: no completed commit within the {policy.cleaner_hours_retained} hours retained "
                f"(hoodie.cleaner.hours.retained)")
    scope = None
    if (policy.cleaner_incremental and since and earliest is not None and last is not None
            and rule is not CleanerPolicy.KEEP_LATEST_FILE_VERSIONS):
        scope = incremental_scope(table, since, earliest, last)
    found = _doomed(table, policy, earliest, scope or full_scope(table), _Guard(table))
    if not found.files:
        if rule is CleanerPolicy.KEEP_LATEST_FILE_VERSIONS:
            return (f"nothing to clean: no file group has more than the {policy.cleaner_file_versions_retained} "
                    f"file versions retained (hoodie.cleaner.fileversions.retained) beyond what pending plans and "
                    f"savepoints keep")
        assert earliest is not None
        return (f"nothing to clean: no file slice older than the earliest commit to retain ({earliest.timestamp}) "
                f"that a newer slice before it supersedes and no pending plan or savepoint keeps")
    return _write_plan(table, rule, earliest, found.scope, found)


def _continued_earliest(table: HudiTable, last: LastClean, rule: CleanerPolicy,
                        earliest: Instant | None) -> Instant | None | Literal[False]:
    """The earliest instant to retain a stopped clean is continued with (its own, so the plans together
    delete what one would), or False if it cannot be: it has been archived, or the retention now keeps more."""
    if rule is CleanerPolicy.KEEP_LATEST_FILE_VERSIONS:
        return None
    kept = table.timeline.get(last.earliest_commit_to_retain) if last.earliest_commit_to_retain else None
    if kept is None or earliest is None or earliest.timestamp < kept.timestamp:
        return False
    return kept


@dataclass
class _Found:
    scope: CleanScope
    files: dict[str, list[str]] = field(default_factory=dict)  # partition -> table-relative paths
    sizes: dict[str, list[int]] = field(default_factory=dict)  # partition -> each file's bytes, as `files`
    count: int = 0
    resume_from: str | None = None  # the partition the plan stopped in (its bound reached)


def _doomed(table: HudiTable, policy: TablePolicy, earliest: Instant | None, scope: CleanScope,
            guard: _Guard) -> _Found:
    """The files to delete in `scope`'s partitions, in order, a few partitions' file groups at a time, whole
    slices up to the policy's bound of files per plan (a slice larger than the bound goes alone)."""
    found, bound = _Found(scope), policy.clean_max_files_per_plan
    for view in chunked_views(table, listing=PartitionListing(scope.partitions, scope.listed)):
        for partition, slices in _deletable_slices(view, policy, earliest, guard):
            for files in slices:
                if bound and found.count and found.count + len(files) > bound:
                    found.resume_from = partition
                    return found
                found.files.setdefault(partition, []).extend(path for path, _ in files)
                found.sizes.setdefault(partition, []).extend(size for _, size in files)
                found.count += len(files)
    return found


def _deletable_slices(view: FileSystemView, policy: TablePolicy, earliest: Instant | None,
                      guard: _Guard) -> Iterator[tuple[str, list[list[tuple[str, int]]]]]:
    """Per partition of `view`, in its order, the files (path, bytes) of each slice the policy deletes."""
    rule = policy.cleaner_policy
    doomed: dict[str, list[list[tuple[str, int]]]] = defaultdict(list)
    for group in view.file_groups():
        protected = guard.protected(group)
        if rule is CleanerPolicy.KEEP_LATEST_FILE_VERSIONS:
            slices = _deletable_by_versions(group, policy.cleaner_file_versions_retained, guard, protected)
        else:
            assert earliest is not None  # plan_clean returned above when it is None under this rule
            slices = _deletable_by_commits(group, earliest.timestamp, protected)
        doomed[group.partition] += [_files_of(fs) for fs in slices]
    for group in view.replaced_file_groups():
        replaced_by = view.replaced[(group.partition, group.file_id)]
        if earliest is None or replaced_by < earliest.timestamp:
            kept = guard.savepointed(group)
            doomed[group.partition] += [_files_of(fs) for fs in group.slices if fs.base_instant not in kept]
    for partition in view.partitions:
        if files := doomed.pop(partition, None):
            yield partition, files


def _write_plan(table: HudiTable, rule: CleanerPolicy, earliest: Instant | None, scope: CleanScope,
                found: _Found) -> Planned:
    tl = table.timeline
    last_write = tl.last_of(WRITE_ACTIONS, completed=True)
    extra = {SAVEPOINTED_TIMESTAMPS: savepointed_timestamps(table)}
    if found.resume_from is not None:
        extra |= {RESUME_FROM: found.resume_from, WINDOW_START: scope.window_start}
    plan = CleanerPlan(
        earliest_instant_to_retain=ActionInstant(timestamp=earliest.timestamp, action=earliest.action,
                                                 state=earliest.state.name) if earliest else None,
        last_completed_commit_timestamp=last_write.timestamp if last_write else "",
        policy=rule.value,
        file_paths_to_be_deleted_per_partition={
            partition: [CleanFileInfo(file_path=join(table.base_path, p), is_bootstrap_base_file=False) for p in paths]
            for partition, paths in sorted(found.files.items())},
        extra_metadata=extra)
    inst = tl.create_requested(Action.CLEAN, serialize_cleaner_plan(plan))
    return Planned(inst.timestamp, TableService.CLEAN, clean_stats_of(found.sizes[p] for p in sorted(found.files)))
