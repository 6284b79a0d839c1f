"""Clustering plans, as Hudi's SparkSizeBasedClusteringPlanStrategy makes them: per partition, the latest
slices whose base file is smaller than the small-file limit, largest first, packed into groups of at most
`max.bytes.per.group` (a slice without a base file counts as a full parquet file), each group writing
ceil(bytes / target file size) file groups; at most `max.num.groups` groups. File groups in a pending
compaction or clustering, or written by a pending write, are left out.

v6 writes `<T>.replacecommit.requested`, v8+ `<T>.clustering.requested`: HoodieRequestedReplaceMetadata
with operationType CLUSTER. Slice paths are absolute, as Hudi's ClusteringPlanStrategy records them."""
from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from tms.hudi.fs_view.view import FileSlice, chunked_views
from tms.hudi.storage.paths import join
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
    serialize_requested_replace_metadata,
)
from tms.table_service import TableService

from .compaction_strategy import TOTAL_IO_READ_MB, TOTAL_LOG_FILES, TOTAL_LOG_FILES_SIZE
from .footprint import file_groups_of_pending_writes
from .incremental import left_out, plan_scope, remember_plan
from .planned import Planned
from .policy import TablePolicy
from .stats import plan_stats
from .triggers import CLUSTER_OPERATION, clustering_trigger
from .ttl import ttl_plan_metadata

EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
SORT_COLUMNS_PARAM = "hoodie.clustering.plan.strategy.sort.columns"

_MB = 1024 * 1024


def _group_size(fs: FileSlice, policy: TablePolicy) -> int:
    return fs.base_file.size if fs.base_file else policy.parquet_max_file_size


def _slices_into_groups(slices: list[FileSlice], policy: TablePolicy) -> list[list[FileSlice]]:
    """SparkSizeBasedClusteringPlanStrategy.buildClusteringGroupsForPartition."""
    groups: list[list[FileSlice]] = []
    current: list[FileSlice] = []
    size = 0
    for fs in sorted(slices, key=lambda s: -_group_size(s, policy)):
        if current and size + _group_size(fs, policy) > policy.clustering_max_bytes_per_group:
            groups.append(current)
            current, size = [], 0
        current.append(fs)
        size += _group_size(fs, policy)
    # A last group of one slice only rewrites it, worth it when sorting or when single groups are allowed.
    if current and (len(current) > 1 or policy.clustering_single_group or policy.sort_columns):
        groups.append(current)
    return groups


def _clustering_group(table: HudiTable, slices: list[FileSlice], policy: TablePolicy) -> ClusteringGroup:
    size = sum(_group_size(fs, policy) for fs in slices)
    log_bytes = sum(fs.log_bytes for fs in slices)
    return ClusteringGroup(
        slices=[SliceInfo(file_id=fs.file_id, partition_path=fs.partition,
                          data_file_path=join(table.base_path, fs.base_file.path) if fs.base_file else "",
                          delta_file_paths=[join(table.base_path, f.path) for f in fs.log_files],
                          bootstrap_file_path="")
                for fs in slices],
        num_output_file_groups=math.ceil(size / policy.clustering_target_file_max_bytes),
        metrics={TOTAL_IO_READ_MB: float(sum(fs.total_bytes for fs in slices) // _MB),
                 TOTAL_LOG_FILES_SIZE: float(log_bytes),
                 TOTAL_LOG_FILES: float(sum(len(fs.log_files) for fs in slices))})


def plan_clustering(table: HudiTable, policy: TablePolicy, now: datetime, *, force: bool = False,
                    full_pass_every: timedelta | None = None) -> Planned | None:
    """Plan a clustering if enough commits landed since the last one (or `force`: an operator asked for one
    now) and small files can be grouped; None otherwise. `now` is unused by Hudi's size-based strategy; the plan
    carries the record TTL's cutoff at `now`. With `full_pass_every`, the plan looks only at the partitions
    written since the last clustering, and at the whole table once per that period (tms.planning.incremental)."""
    tl = table.timeline
    tl.reload()
    if not force and not clustering_trigger(table, policy).due:
        return None
    scope = plan_scope(table, TableService.CLUSTERING, now, full_pass_every, policy)
    if scope.partitions is not None and not scope.partitions:
        return None  # nothing written since the last clustering, nothing left out by it
    busy: set[tuple[str, str]] | None = None
    groups: list[list[FileSlice]] = []
    cut: list[str] = []  # partitions whose groups the bound on groups cut
    for view in chunked_views(table, scope.partitions):  # a few partitions at a time, in order
        if busy is None:  # the same for every chunk
            busy = set(view.pending_compaction) | set(view.pending_clustering) | file_groups_of_pending_writes(table)
        by_partition: dict[str, list] = defaultdict(list)
        for fs in view.latest_slices():
            if (fs.partition, fs.file_id) not in busy and fs.base_size < policy.clustering_small_file_limit:
                by_partition[fs.partition].append(fs)
        for partition in sorted(by_partition):
            grouped = _slices_into_groups(by_partition[partition], policy)
            room = max(0, policy.clustering_max_num_groups - len(groups))  # at most max.num.groups in all
            groups += grouped[:room]
            if len(grouped) > room:
                cut.append(partition)
    if not groups:
        return None
    params = {SORT_COLUMNS_PARAM: ",".join(policy.sort_columns)} if policy.sort_columns else {}
    extra, missing = ttl_plan_metadata(policy, now), None
    if table.config.traits.completion_times:  # what the next plan needs to schedule incrementally
        missing = left_out(cut, busy or ())
        extra |= scope.metadata()
    plan = ClusteringPlan(input_groups=[_clustering_group(table, g, policy) for g in groups],
                          strategy=ClusteringStrategy(strategy_class_name=EXECUTION_STRATEGY, strategy_params=params),
                          extra_metadata=extra, version=1, preserve_hoodie_metadata=True,
                          missing_schedule_partitions=missing)
    meta = RequestedReplaceMetadata(operation_type=CLUSTER_OPERATION, clustering_plan=plan, extra_metadata={})
    action = Action.CLUSTERING if table.config.traits.clustering_action else Action.REPLACE_COMMIT
    inst = tl.create_requested(action, serialize_requested_replace_metadata(meta))
    remember_plan(tl, inst.timestamp, extra, missing)
    return Planned(inst.timestamp, TableService.CLUSTERING, plan_stats(table, inst.timestamp), scope=scope.describe())
