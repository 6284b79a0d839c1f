"""Compaction on Spark of MOR tables written by the writer: hudi-rs reads the model's rows before and after,
the completed commit carries full write stats; refusals (a metadata table partition TMS cannot maintain, CUSTOM
merge mode, a v6 plan held by earlier writes) change nothing. The fixture tables are in test_jobs_fixtures."""
import pyarrow.parquet as pq
import pytest
from execute_support import ModelledTable, copy_fixture, plan_compaction, rec, set_properties, write_history

from tms.execute.dispatch import execute_instant, executor_for
from tms.execute.errors import PlanHeldError
from tms.execute.fencing import no_fence
from tms.execute.runner import LocalRunner
from tms.hudi.errors import UnsupportedTableError
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.records.bloom import FOOTER_KEY, might_contain
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.archival import ArchivalSettings, archive
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_compaction_plan


def _meta_by_key(table: HudiTable) -> dict:
    snapshot = read_snapshot(table).select(["_hoodie_record_key", "_hoodie_commit_time", "_hoodie_commit_seqno"])
    return {r["_hoodie_record_key"]: r for r in snapshot.to_pylist()}


@pytest.mark.parametrize("version", [6, 8])
def test_compaction_of_a_written_mor_table(tmp_path, spark_runner, version):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", version)
    write_history(t)
    t.check()
    tc = plan_compaction(t.table())
    planned = _meta_by_key(t.table())
    # A write after the plan: its logs belong to the slice the compaction opens, not to the compaction.
    t.write([rec(i, 40) for i in range(6)])

    result = execute_instant(t.table(), tc, spark_runner)

    t.check()
    table = t.table()
    done = table.timeline.get(tc)
    assert done.is_completed and done.action == "commit" and result.instant == done
    meta = table.timeline.commit_metadata(done)
    plan = parse_compaction_plan(table.timeline.read_plan(tc))
    assert meta.compacted and meta.operation_type == "COMPACT" and meta.schema()
    stats = {s.file_id: s for s in meta.write_stats()}
    assert set(stats) == {op.file_id for op in plan.operations}
    for op in plan.operations:
        stat = stats[op.file_id]
        assert stat.prev_commit == op.base_instant_time and stat.prev_base_file == op.data_file_path
        assert stat.total_log_files_compacted == len(op.delta_file_paths) and stat.total_log_size_compacted > 0
        assert stat.total_log_records > 0 and stat.total_log_blocks > 0
        assert stat.num_inserts + stat.num_update_writes <= stat.num_writes
        base = pq.read_table(tmp_path / "t" / stat.path)
        assert base.num_rows == stat.num_writes
        assert stat.file_size_in_bytes == (tmp_path / "t" / stat.path).stat().st_size
        name = BaseFileName.parse(stat.path.rsplit("/", 1)[-1])
        assert (name.file_id, name.instant) == (op.file_id, tc)
        assert set(base.column("_hoodie_file_name").to_pylist()) == {stat.path.rsplit("/", 1)[-1]}
        bloom = pq.read_metadata(tmp_path / "t" / stat.path).metadata[FOOTER_KEY]
        for row in base.to_pylist():
            # commit time and seqno survive; only the planned logs were merged (not the ts=40 write)
            assert planned[row["_hoodie_record_key"]] == {k: row[k] for k in planned[row["_hoodie_record_key"]]}
            assert row["ts"] != 40 and might_contain(bloom, row["_hoodie_record_key"])
    assert not (tmp_path / "t" / ".hoodie" / ".temp" / tc).exists(), "markers are removed at completion"

    # The table lives on: writes and a second compaction on top of the first one's base files.
    t.write([rec(i, 50) for i in range(3, 9)] + [rec(40, 50)])
    t.write([{"id": 4, "city": "nyc"}], "delete")
    execute_instant(t.table(), plan_compaction(t.table()), spark_runner)
    t.check()


def test_a_compaction_completes_when_its_delta_commits_are_archived_while_it_runs(tmp_path):
    """An archiver (a writer's, or TMS's archive task) may move the delta commits a compaction merges to the
    archived timeline while the job runs: what the job listed and no longer finds is read as archived, not as an
    error (the job used to fail, and its pending compaction held archival back until its retry)."""
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    write_history(t)
    tc = plan_compaction(t.table())
    executor = executor_for(t.table(), tc)  # the job's timeline, listed before the archiver runs
    archived = archive(t.table(), ArchivalSettings(min_commits=1, max_commits=2, compaction_delta_commits=None,
                                                   metadata_enabled=False))
    assert len(archived.archived) >= 2 and all(ts < tc for ts in archived.archived)

    executor.finish(LocalRunner(1).map(executor.task_function, executor.start(no_fence)), no_fence)

    t.check()
    assert t.table().timeline.get(tc).is_completed


def test_table_with_a_metadata_partition_tms_cannot_maintain_is_refused(tmp_path, fixture_tables, spark_runner):
    # The metadata table itself is kept in sync (test_jobs_metadata); an expression index is not.
    path = copy_fixture(fixture_tables, "mor_v8_trips_8i3u1d", tmp_path)
    parts = HudiTable.load(str(path)).config.get("hoodie.table.metadata.partitions")
    set_properties(path, {"hoodie.table.metadata.partitions": parts + ",expr_index_fare"})
    tc = plan_compaction(HudiTable.load(str(path)))
    files_before = sorted(p for p in path.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedTableError, match="metadata table partition.*expr_index_fare"):
        execute_instant(HudiTable.load(str(path)), tc, spark_runner)
    assert set(HudiTable.load(str(path)).timeline.states_of(tc)) == {State.REQUESTED}
    assert sorted(p for p in path.rglob("*") if p.is_file()) == files_before


@pytest.mark.parametrize("name,custom", [
    ("mor_v6_trips_8i1u", {"hoodie.compaction.payload.class": "com.example.MergeByRules"}),
    ("mor_v8_trips_8i3u1d", {"hoodie.record.merge.mode": "CUSTOM"}),
])
def test_custom_merge_mode_is_refused(tmp_path, fixture_tables, spark_runner, name, custom):
    path = copy_fixture(fixture_tables, name, tmp_path, drop_metadata_table=True)
    set_properties(path, custom)
    tc = plan_compaction(HudiTable.load(str(path)))
    files_before = sorted(p for p in path.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):
        execute_instant(HudiTable.load(str(path)), tc, spark_runner)
    assert set(HudiTable.load(str(path)).timeline.states_of(tc)) == {State.REQUESTED}
    assert sorted(p for p in path.rglob("*") if p.is_file()) == files_before


def test_v6_plan_waits_for_delta_commits_started_before_it(tmp_path, spark_runner):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    t.write([rec(i, 10) for i in range(12)], "insert")
    t.write([rec(i, 20) for i in range(6)])
    late = [rec(i, 30, "late") for i in range(0, 12, 2)]
    pending = t.write(late, leave_inflight=True)  # appends blocks to the slices' log files
    tc = plan_compaction(t.table())

    with pytest.raises(PlanHeldError, match=pending) as held:
        execute_instant(t.table(), tc, spark_runner)
    assert [b.timestamp for b in held.value.blockers] == [pending]
    assert set(t.table().timeline.states_of(tc)) == {State.REQUESTED}

    t.writer.complete(pending)
    t.model.upsert(late)
    execute_instant(t.table(), tc, spark_runner)
    t.check()
