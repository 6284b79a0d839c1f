"""Clustering: Hudi's size-based grouping of small files, COW and MOR, v6 replacecommit and v8 clustering
plans, and the file groups it must leave alone."""
import pytest
from planning_support import ModelledTable, now, policy, rec

from tms.hudi.timeline.serde import parse_requested_replace_metadata
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction
from tms.planning.stats import plan_stats
from tms.planning.triggers import clustering_trigger

EVERY_COMMIT = {"hoodie__clustering__async__max__commits": 1}


def _small_files(tmp_path, table_type="COPY_ON_WRITE", version=6, batches=3) -> ModelledTable:
    """`batches` insert commits of new keys: as many file groups per city."""
    t = ModelledTable(tmp_path / "t", table_type=table_type, version=version)
    for b in range(batches):
        t.write([rec(i, 10) for i in range(b * 3, b * 3 + 3)], "insert")
    return t


def _plan(t: ModelledTable, instant):
    meta = parse_requested_replace_metadata(t.table().timeline.read_plan(instant))
    assert meta.operation_type == "CLUSTER"
    return meta.clustering_plan


@pytest.mark.parametrize("table_type,version,action", [("COPY_ON_WRITE", 6, "replacecommit"),
                                                        ("MERGE_ON_READ", 6, "replacecommit"),
                                                        ("COPY_ON_WRITE", 8, "clustering"),
                                                        ("MERGE_ON_READ", 8, "clustering")])
def test_small_files_of_each_partition_form_one_group(tmp_path, table_type, version, action):
    t = _small_files(tmp_path, table_type, version)
    if table_type == "MERGE_ON_READ":
        t.write([rec(0, 20)])  # a log file in one sf file group
    planned = plan_clustering(t.table(), policy(**EVERY_COMMIT), now())
    table = t.table()
    requested = table.timeline.get(planned.instant)
    assert (requested.action, requested.state.name) == (action, "REQUESTED")
    plan = _plan(t, planned.instant)
    assert plan.strategy.strategy_class_name == \
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
    assert plan.strategy.strategy_params == {} and plan.preserve_hoodie_metadata is True and plan.version == 1
    assert [{s.partition_path for s in g.slices} for g in plan.input_groups] == [{"city=nyc"}, {"city=sf"}, {"city=sp"}]
    latest = {(fs.partition, fs.file_id): fs for fs in table.file_system_view().latest_slices()}
    for group in plan.input_groups:
        assert len(group.slices) == 3 and group.num_output_file_groups == 1
        for s in group.slices:
            fs = latest[(s.partition_path, s.file_id)]
            assert s.data_file_path == f"{table.base_path}/{fs.base_file.path}"
            assert s.delta_file_paths == [f"{table.base_path}/{f.path}" for f in fs.log_files]
        assert group.metrics["TOTAL_LOG_FILES"] == sum(len(latest[(s.partition_path, s.file_id)].log_files)
                                                       for s in group.slices)
    assert sum(len(s.delta_file_paths) for g in plan.input_groups for s in g.slices) == (
        1 if table_type == "MERGE_ON_READ" else 0)
    assert planned.stats == plan_stats(table, planned.instant)
    assert planned.stats.operations == 3
    assert planned.stats.within_budget, "Parquet groups are clustered within the job's memory budget"
    assert planned.stats.largest_file_group_bytes == max(fs.total_bytes for fs in latest.values())
    assert plan_clustering(t.table(), policy(**EVERY_COMMIT), now()) is None, "never planned twice"
    t.check()


def test_group_size_limits_group_count_and_sort_columns(tmp_path):
    t = _small_files(tmp_path, batches=4)
    largest = max(fs.base_size for fs in t.table().file_system_view().latest_slices())
    two_per_group = policy(**EVERY_COMMIT, hoodie__clustering__plan__strategy__max__bytes__per__group=2 * largest,
                           hoodie__clustering__plan__strategy__target__file__max__bytes=largest,
                           hoodie__clustering__plan__strategy__max__num__groups=5,
                           hoodie__clustering__plan__strategy__sort__columns="ts, name")
    plan = _plan(t, plan_clustering(t.table(), two_per_group, now()).instant)
    # 4 small files per city, 2 per group: 6 groups, of which the first 5 are planned.
    assert [(g.slices[0].partition_path, len(g.slices)) for g in plan.input_groups] == [
        ("city=nyc", 2), ("city=nyc", 2), ("city=sf", 2), ("city=sf", 2), ("city=sp", 2)]
    assert [g.num_output_file_groups for g in plan.input_groups] == [2] * 5
    assert plan.strategy.strategy_params == {"hoodie.clustering.plan.strategy.sort.columns": "ts,name"}


def test_single_slice_groups_and_the_small_file_limit(tmp_path):
    t = _small_files(tmp_path, batches=1)
    no_singles = policy(**EVERY_COMMIT,
                        hoodie__clustering__plan__strategy__single__group__clustering__enabled="false")
    assert plan_clustering(t.table(), no_singles, now()) is None, "one small file per partition: nothing to gain"
    sizes = [fs.base_size for fs in t.table().file_system_view().latest_slices()]
    too_big = policy(**EVERY_COMMIT, hoodie__clustering__plan__strategy__small__file__limit=min(sizes))
    assert plan_clustering(t.table(), too_big, now()) is None
    assert plan_clustering(t.table(), policy(**EVERY_COMMIT), now()).stats.operations == 3


def test_file_groups_in_pending_plans_or_written_by_pending_writes_are_left_alone(tmp_path):
    t = _small_files(tmp_path, "MERGE_ON_READ")
    t.write([rec(0, 20)])  # sf: a log file
    compaction = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now())
    assert compaction.stats.operations == 1
    t.write([rec(1, 30)], leave_inflight=True)  # nyc: a write in flight
    plan = _plan(t, plan_clustering(t.table(), policy(**EVERY_COMMIT), now()).instant)
    counts = {g.slices[0].partition_path: len(g.slices) for g in plan.input_groups}
    assert counts == {"city=sf": 2, "city=nyc": 2, "city=sp": 3}
    file_ids = {s.file_id for g in plan.input_groups for s in g.slices}
    view = t.table().file_system_view()
    assert not file_ids & {fid for (_, fid) in view.pending_compaction}


def test_clustering_waits_for_enough_commits_since_the_last_one(tmp_path):
    t = _small_files(tmp_path, batches=2)
    every_two = policy(hoodie__clustering__async__max__commits=2)
    first = plan_clustering(t.table(), every_two, now())
    assert first is not None
    decision = clustering_trigger(t.table(), every_two)
    assert (decision.since, decision.commits, decision.due) == (first.instant, 0, False)
    t.write([rec(30, 10)], "insert")
    assert plan_clustering(t.table(), every_two, now()) is None
    t.write([rec(31, 10)], "insert")
    second = plan_clustering(t.table(), every_two, now())
    first_ids = {s.file_id for g in _plan(t, first.instant).input_groups for s in g.slices}
    second_ids = [s.file_id for g in _plan(t, second.instant).input_groups for s in g.slices]
    assert len(second_ids) == 2 and not first_ids & set(second_ids), "only the two new file groups"
