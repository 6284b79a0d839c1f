"""Helpers of the execution tests: tables written by the writer with their model, plans built by hand with
serde (as the planner will write them), and the checks that hudi-rs reads what the model says."""
from __future__ import annotations

import posixpath
import shutil
from pathlib import Path

from table_model import CITIES, COLUMNS, ModelledTable, key, rec  # noqa: F401 (re-exported to the tests)

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import format_properties
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    CompactionOperation,
    CompactionPlan,
    InstantInfo,
    RequestedReplaceMetadata,
    RollbackPlan,
    RollbackRequest,
    SliceInfo,
    parse_commit_metadata,
    serialize_cleaner_plan,
    serialize_compaction_plan,
    serialize_requested_replace_metadata,
    serialize_rollback_plan,
)


def write_history(t: ModelledTable) -> None:
    """A table's usual life: inserts, updates (some older, losing under event-time ordering), deletes, a
    deleted key coming back."""
    t.write([rec(i, 10) for i in range(30)], "insert")
    t.write([rec(i, 20) for i in range(10)] + [rec(i, 5, "older") for i in range(10, 13)]
            + [rec(i, 10) for i in range(30, 36)])
    t.write([key(i) for i in range(20, 25)], "delete")
    t.write([rec(i, 30) for i in range(0, 36, 3)] + [rec(21, 1, "back")])


def plan_compaction(table: HudiTable) -> str:
    """A compaction plan of every latest file slice that has log files; returns its instant."""
    view = table.file_system_view()
    ops = [CompactionOperation(base_instant_time=fs.base_instant, file_id=fs.file_id, partition_path=fs.partition,
                               data_file_path=fs.base_file.file_name if fs.base_file else None,
                               delta_file_paths=[f.file_name for f in fs.log_files])
           for fs in view.latest_slices() if fs.log_files]
    assert ops, "nothing to compact"
    plan = serialize_compaction_plan(CompactionPlan(operations=ops))
    return table.timeline.create_requested(Action.COMPACTION, plan).timestamp


def plan_clustering(table: HudiTable, sort_columns: str = "", target_bytes: int | None = None) -> str:
    """A clustering plan rewriting every file group of each partition (one group per partition), with
    Java's absolute paths."""
    view = table.file_system_view()
    groups = []
    for partition in view.partitions:
        slices = [SliceInfo(file_id=fs.file_id, partition_path=fs.partition,
                            data_file_path=posixpath.join(table.base_path, fs.base_file.path) if fs.base_file else "",
                            delta_file_paths=[posixpath.join(table.base_path, f.path) for f in fs.log_files])
                  for fs in view.merged_latest_slices() if fs.partition == partition]
        if slices:
            groups.append(ClusteringGroup(slices=slices, num_output_file_groups=1))
    params = {"hoodie.clustering.plan.strategy.sort.columns": sort_columns}
    if target_bytes:
        params["hoodie.clustering.plan.strategy.target.file.max.bytes"] = str(target_bytes)
    plan = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=ClusteringPlan(
        input_groups=groups, strategy=ClusteringStrategy(
            strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
            strategy_params=params)))
    action = Action.CLUSTERING if table.config.version >= 8 else Action.REPLACE_COMMIT
    return table.timeline.create_requested(action, serialize_requested_replace_metadata(plan)).timestamp


def plan_rollback_of_write(table: HudiTable, instant: str) -> str:
    """The rollback plan Hudi's planner makes of a failed write: its new files are deleted, and blocks it
    appended to existing log files are marked rolled back."""
    inflight = table.timeline.states_of(instant)[State.INFLIGHT]
    requests = []
    for stat in parse_commit_metadata(table.timeline.read(inflight)).write_stats():
        path = posixpath.join(table.base_path, stat.path)
        if stat.log_files is not None and stat.log_offset:
            requests.append(RollbackRequest(partition_path=stat.partition_path, file_id=stat.file_id,
                                            latest_base_instant=stat.prev_commit,
                                            log_blocks_to_be_deleted={path: stat.file_size_in_bytes}))
        else:
            requests.append(RollbackRequest(partition_path=stat.partition_path, file_id=stat.file_id,
                                            files_to_be_deleted=[path]))
    plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=instant, action=inflight.action),
                        rollback_requests=requests)
    return table.timeline.create_requested(Action.ROLLBACK, serialize_rollback_plan(plan)).timestamp


def plan_clean_of_old_versions(table: HudiTable) -> tuple[str, list[str]]:
    """A clean plan deleting every file slice but the latest of each file group (KEEP_LATEST_FILE_VERSIONS 1);
    returns its instant and the deleted files' paths."""
    view = table.file_system_view()
    doomed: dict[str, list[CleanFileInfo]] = {}
    paths = []
    for group in view.file_groups():
        for fs in group.slices[:-1]:
            files = ([fs.base_file.path] if fs.base_file else []) + [f.path for f in fs.log_files]
            doomed.setdefault(group.partition, []).extend(CleanFileInfo(file_path=table.storage.uri(p)) for p in files)
            paths += files
    last = table.timeline.last_completed()
    plan = CleanerPlan(earliest_instant_to_retain=ActionInstant(timestamp=last.timestamp, action=last.action,
                                                                state="COMPLETED"),
                       last_completed_commit_timestamp=last.timestamp, policy="KEEP_LATEST_FILE_VERSIONS",
                       file_paths_to_be_deleted_per_partition=doomed)
    return table.timeline.create_requested(Action.CLEAN, serialize_cleaner_plan(plan)).timestamp, paths


def copy_fixture(fixture_tables: dict, name: str, dest: Path, *, drop_metadata_table: bool = False) -> Path:
    path = Path(shutil.copytree(fixture_tables[name], dest / name))
    if drop_metadata_table:
        set_properties(path, {"hoodie.table.metadata.partitions": None,
                              "hoodie.table.metadata.partitions.inflight": None})
        shutil.rmtree(path / ".hoodie" / "metadata", ignore_errors=True)
    return path


def set_properties(path: Path, changes: dict[str, str | None]) -> None:
    """Change (None: remove) properties of a table's hoodie.properties."""
    table = HudiTable.load(str(path))
    props = {k: v for k, v in table.config.props.items() if changes.get(k, v) is not None}
    props.update({k: v for k, v in changes.items() if v is not None})
    (path / ".hoodie" / "hoodie.properties").write_text(format_properties(props))
