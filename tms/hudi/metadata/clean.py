"""The metadata table's own clean, run as Hudi's metadata writer runs it (cleanIfNecessary), before its compaction:

- KEEP_LATEST_COMMITS over the MDT's completed commits and delta commits, retaining the larger of 20 and 1.2 times
  the data table's `hoodie.cleaner.commits.retained` (HoodieMetadataWriteUtils);
- not until 3 instants completed after the last compaction: a reader that opened the old slice's log files just
  before it may still read them;
- in each file group, the slices older than the earliest commit retained go, but the latest and the last one
  before that commit;
- the instant: a fresh one on versions 8 and 9, the latest delta commit's time with `002` appended on version 6
  (HoodieTableMetadataUtil.createCleanTimestamp);
- a clean left pending (a crash) is finished from its plan first."""
from __future__ import annotations

import math
import posixpath
import time

from ..config.write import CLEANER_COMMITS_RETAINED
from ..errors import HudiError
from ..fs_view.file_names import BaseFileName, LogFileName
from ..storage.paths import table_relative
from ..table.hudi_table import HudiTable
from ..timeline.instant import Action, Instant, State
from ..timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    parse_cleaner_plan,
    serialize_clean_metadata,
    serialize_cleaner_plan,
)
from .reader import MetadataTable

MDT_COMMITS_RETAINED = 20
INSTANTS_AFTER_COMPACTION = 3
_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
_POLICY = "KEEP_LATEST_COMMITS"


def commits_retained(data: HudiTable) -> int:
    return max(MDT_COMMITS_RETAINED, math.ceil(1.2 * CLEANER_COMMITS_RETAINED.value(data.config.props)))


def finish_pending_cleans(mdt: MetadataTable) -> bool:
    """Finish any clean a crash left pending on the MDT; whether there was one."""
    pending = mdt.table.timeline.pending((Action.CLEAN,))
    for inst in pending:
        _execute(mdt, inst)
    return bool(pending)


def clean_if_due(data: HudiTable, mdt: MetadataTable) -> str | None:
    """Clean the MDT of `data` if a clean is due and finds files: its instant, or None. The caller holds the
    table's lock and has checked that nothing is pending on the MDT."""
    tl = mdt.table.timeline
    last_compaction = tl.last_of((Action.COMMIT,), completed=True)
    if last_compaction is None or len(tl.completed(after=last_compaction.timestamp)) < INSTANTS_AFTER_COMPACTION:
        return None
    commits = tl.completed(_COMMITS)
    retained = commits_retained(data)
    if len(commits) <= retained:
        return None
    earliest = commits[len(commits) - retained]
    doomed: dict[str, list[str]] = {}
    for part in mdt.partitions:
        for group in mdt.view.file_groups(part):
            newest_first = list(reversed(group.slices))
            before_earliest = next((s.base_instant for s in newest_first if s.base_instant < earliest.timestamp), None)
            keep = {newest_first[0].base_instant, before_earliest}
            for fs in newest_first:
                if fs.base_instant not in keep and fs.base_instant < earliest.timestamp:
                    doomed.setdefault(part, []).extend(
                        ([fs.base_file.path] if fs.base_file else []) + [lf.path for lf in fs.log_files])
    if not doomed:
        return None
    last_delta = tl.last_of((Action.DELTA_COMMIT,), completed=True)
    if data.config.traits.is_hudi_1:
        instant = data.timeline.new_instant_time()
    elif last_delta is not None:
        instant = last_delta.timestamp + "002"
    else:
        return None
    if tl.states_of(instant):
        return None
    plan = CleanerPlan(
        earliest_instant_to_retain=ActionInstant(timestamp=earliest.timestamp, action=earliest.action,
                                                 state=State.COMPLETED.name),
        last_completed_commit_timestamp=commits[-1].timestamp, policy=_POLICY,
        file_paths_to_be_deleted_per_partition={
            part: [CleanFileInfo(file_path=posixpath.join(mdt.table.base_path, rel)) for rel in sorted(rels)]
            for part, rels in sorted(doomed.items())})
    requested = tl.create_requested(Action.CLEAN, serialize_cleaner_plan(plan), timestamp=instant)
    _execute(mdt, requested)
    return instant


def _execute(mdt: MetadataTable, requested: Instant) -> None:
    """Delete the files the plan at `requested` names and complete it. A plan read from storage names data files
    (base or log files) of the MDT's partitions, or it is refused in one line before anything is deleted."""
    started = time.monotonic()
    tl = mdt.table.timeline
    plan_bytes = tl.read_plan(requested.timestamp)
    plan = parse_cleaner_plan(plan_bytes)
    partitions = set(mdt.partitions)
    doomed: dict[str, list[str]] = {}
    for part, infos in plan.file_paths_to_be_deleted_per_partition.items():
        for info in infos:
            rel = table_relative(mdt.table.base_path, info.file_path or "", part)
            name = posixpath.basename(rel)
            if part not in partitions or posixpath.dirname(rel) != part or not (
                    BaseFileName.parse(name) or LogFileName.parse(name)):
                raise HudiError(f"metadata table clean {requested.timestamp} names {info.file_path!r}, not a file of "
                                "the metadata table's partitions: nothing was deleted")
            doomed.setdefault(part, []).append(rel)
    inflight = tl.transition_to_inflight(requested, plan_bytes) if requested.state is State.REQUESTED else requested
    partition_metadata = {}
    for part, rels in doomed.items():
        # A file already gone (an earlier attempt's) counts as deleted, as Hudi's cleaner counts it.
        mdt.table.storage.delete_many(rels)
        names = [posixpath.basename(rel) for rel in rels]
        partition_metadata[part] = CleanPartitionMetadata(partition_path=part, policy=plan.policy,
                                                          delete_path_patterns=names, success_delete_files=names)
    earliest = plan.earliest_instant_to_retain
    meta = CleanMetadata(start_clean_time=requested.timestamp,
                         time_taken_in_millis=int((time.monotonic() - started) * 1000),
                         total_files_deleted=sum(len(rels) for rels in doomed.values()),
                         earliest_commit_to_retain=earliest.timestamp if earliest else "",
                         last_completed_commit_timestamp=plan.last_completed_commit_timestamp or "",
                         partition_metadata=partition_metadata)
    tl.complete(inflight, serialize_clean_metadata(meta))
