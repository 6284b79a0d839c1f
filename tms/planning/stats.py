"""Plan statistics the worker sizes a job by: how many operations a plan has, the bytes each one reads
(base file + log files), and the largest file group (executor memory goes by it).

An operation is what one Spark task runs: a file group for compaction, a clustering group, a partition of
a clean, a rollback request. Sizes come from the file listings, so a plan written by someone else (an
adopted one) is sized the same way as our own."""
from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from tms.hudi.records.base_format import PARQUET, table_base_format
from tms.hudi.storage.paths import table_relative
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import (
    TTL_CUTOFF_KEY,
    CleanerPlan,
    CompactionPlan,
    RequestedReplaceMetadata,
    RollbackPlan,
    parse_cleaner_plan,
    parse_compaction_plan,
    parse_requested_replace_metadata,
    parse_rollback_plan,
)

from .errors import PlanningError

# (partition, file name) -> bytes; 0 for a file that is not there
SizeOf = Callable[[str, str], int]


@dataclass(frozen=True)
class PlanStats:
    operations: int
    operation_bytes: tuple[int, ...]
    largest_file_group_bytes: int
    # The plan's merges stream within the job's memory budget (Parquet file groups without a record TTL: see
    # tms.execute.compaction and clustering); otherwise a job holds an operation's rows in memory.
    within_budget: bool = False

    @property
    def total_bytes(self) -> int:
        return sum(self.operation_bytes)


class ListedSizes:
    """File sizes from one listing per partition, taken when first asked for."""

    def __init__(self, table: HudiTable):
        self.table = table
        self._partitions: dict[str, dict[str, int]] = {}

    def __call__(self, partition: str, name: str) -> int:
        sizes = self._partitions.get(partition)
        if sizes is None:
            sizes = {i.name: i.size for i in self.table.storage.listdir(partition) if not i.is_dir}
            self._partitions[partition] = sizes
        return sizes.get(name, 0)

    def of_path(self, path: str) -> int:
        """Size of a file named by an absolute (or table-relative) path; 0 if it is elsewhere or gone."""
        try:
            rel = table_relative(self.table.base_path, path)
        except PlanningError:
            return 0
        return self(*posixpath.split(rel))


def _stats(operation_bytes: list[int], largest: int) -> PlanStats:
    return PlanStats(len(operation_bytes), tuple(operation_bytes), largest)


def compaction_stats(plan: CompactionPlan, size_of: SizeOf) -> PlanStats:
    sizes = []
    for op in plan.operations:
        part = op.partition_path or ""
        base = size_of(part, op.data_file_path) if op.data_file_path else 0
        sizes.append(base + sum(size_of(part, name) for name in op.delta_file_paths))
    return _stats(sizes, max(sizes, default=0))


def clustering_stats(meta: RequestedReplaceMetadata, sizes: ListedSizes) -> PlanStats:
    groups, largest = [], 0
    plan = meta.clustering_plan
    for group in plan.input_groups if plan is not None else []:
        slice_bytes = [(sizes.of_path(s.data_file_path) if s.data_file_path else 0)
                       + sum(sizes.of_path(p) for p in s.delta_file_paths) for s in group.slices]
        groups.append(sum(slice_bytes))
        largest = max([largest, *slice_bytes])
    return _stats(groups, largest)


def clean_stats(plan: CleanerPlan, sizes: ListedSizes) -> PlanStats:
    return clean_stats_of([sizes.of_path(i.file_path) for i in infos if i.file_path]
                          for infos in plan.file_paths_to_be_deleted_per_partition.values())


def clean_stats_of(file_sizes_per_partition: Iterable[list[int]]) -> PlanStats:
    """Statistics of a clean plan from its files' sizes, a list per partition in the plan's order (the
    planner's own, known from the listing it planned by: no second read of the plan and its partitions)."""
    per_partition, largest = [], 0
    for files in file_sizes_per_partition:
        per_partition.append(sum(files))
        largest = max([largest, *files])
    return _stats(per_partition, largest)


def rollback_stats(plan: RollbackPlan, sizes: ListedSizes) -> PlanStats:
    per_request = [sum(sizes.of_path(p) for p in [*r.files_to_be_deleted, *r.log_blocks_to_be_deleted])
                   for r in plan.rollback_requests]
    return _stats(per_request, max(per_request, default=0))


def compaction_plan_stats(table: HudiTable, plan: CompactionPlan, sizes: SizeOf | list[int]) -> PlanStats:
    """Statistics of the compaction plan `plan` of `table`, its files' sizes from `size_of`, or each operation's
    bytes (the planner's own, as it listed them)."""
    with_ttl = TTL_CUTOFF_KEY in (plan.extra_metadata or {})
    parquet = table_base_format(table.config) == PARQUET
    stats = _stats(sizes, max(sizes, default=0)) if isinstance(sizes, list) else compaction_stats(plan, sizes)
    return replace(stats, within_budget=parquet and not with_ttl)


def plan_stats(table: HudiTable, timestamp: str) -> PlanStats:
    """Statistics of the requested plan at `timestamp` (compaction, clustering, clean or rollback)."""
    inst = table.timeline.get(timestamp)
    if inst is None:
        raise PlanningError(f"no instant {timestamp} on the timeline of {table.name}")
    data = table.timeline.read_plan(timestamp)
    sizes = ListedSizes(table)
    parquet = table_base_format(table.config) == PARQUET
    if inst.action == Action.COMPACTION:
        return compaction_plan_stats(table, parse_compaction_plan(data), sizes)
    if inst.action in (Action.CLUSTERING, Action.REPLACE_COMMIT):
        meta = parse_requested_replace_metadata(data)
        if meta.clustering_plan is None:
            raise PlanningError(f"replace commit {timestamp} is not a clustering plan")
        return replace(clustering_stats(meta, sizes), within_budget=parquet)
    if inst.action == Action.CLEAN:
        return clean_stats(parse_cleaner_plan(data), sizes)
    if inst.action == Action.ROLLBACK:
        return rollback_stats(parse_rollback_plan(data), sizes)
    raise PlanningError(f"instant {timestamp} is a {inst.action}, not a plan")
