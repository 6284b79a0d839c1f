"""Clean and rollback on Spark: the plan's files go, the metadata is written, the table reads the same."""
import pytest
from execute_support import (
    ModelledTable,
    plan_clean_of_old_versions,
    plan_compaction,
    plan_rollback_of_write,
    rec,
    write_history,
)

from tms.execute.clean import CleanExecutor
from tms.execute.dispatch import execute_instant
from tms.execute.fencing import no_fence
from tms.hudi.fs_view.file_names import LogFileName
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import (
    parse_clean_metadata,
    parse_rollback_metadata,
)


@pytest.mark.parametrize("table_type,version", [("COPY_ON_WRITE", 6), ("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 8)])
def test_clean_deletes_old_file_versions(tmp_path, spark_runner, table_type, version):
    t = ModelledTable(tmp_path / "t", table_type, version)
    write_history(t)
    if table_type == "MERGE_ON_READ":
        execute_instant(t.table(), plan_compaction(t.table()), spark_runner)
    ts, doomed = plan_clean_of_old_versions(t.table())
    assert doomed and all((t.path / p).exists() for p in doomed)

    result = execute_instant(t.table(), ts, spark_runner)

    assert not any((t.path / p).exists() for p in doomed)
    t.check()
    table = t.table()
    done = table.timeline.get(ts)
    assert done.is_completed and done.action == "clean" and result.instant == done
    meta = parse_clean_metadata(table.timeline.read(done))
    assert meta.total_files_deleted == len(doomed) == result.files_deleted
    assert sorted(f for pm in meta.partition_metadata.values() for f in pm.success_delete_files) == sorted(
        p.rsplit("/", 1)[-1] for p in doomed)
    assert all(pm.policy == "KEEP_LATEST_FILE_VERSIONS" and not pm.failed_delete_files
               for pm in meta.partition_metadata.values())


def test_clean_left_inflight_runs_again(tmp_path, spark_runner):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 6)
    write_history(t)
    ts, doomed = plan_clean_of_old_versions(t.table())
    crashed = CleanExecutor(t.table(), t.table().timeline.get(ts))
    tasks = crashed.start(no_fence)
    first = crashed.task_function(tasks[0], "0-0-0")[0]  # then the driver dies
    assert t.table().timeline.get(ts).state is State.INFLIGHT

    result = execute_instant(t.table(), ts, spark_runner)

    assert result.instant.is_completed and not any((t.path / p).exists() for p in doomed)
    meta = parse_clean_metadata(t.table().timeline.read(result.instant))
    assert sorted(meta.partition_metadata[first.partition].failed_delete_files) == sorted(first.deleted)
    t.check()


@pytest.mark.parametrize("table_type,version", [("MERGE_ON_READ", 6), ("MERGE_ON_READ", 8), ("COPY_ON_WRITE", 6)])
def test_rollback_of_a_crashed_write(tmp_path, spark_runner, table_type, version):
    t = ModelledTable(tmp_path / "t", table_type, version)
    write_history(t)
    crashed = t.write([rec(i, 99, "crashed") for i in range(0, 40, 3)], leave_inflight=True)  # updates and inserts
    assert (t.path / ".hoodie" / ".heartbeat" / crashed).exists()
    assert (t.path / ".hoodie" / ".temp" / crashed).exists()
    before = t.table().timeline
    written = [s.path for s in before.commit_metadata(before.get(crashed)).write_stats()]  # its inflight workload
    t.check()
    ts = plan_rollback_of_write(t.table(), crashed)

    result = execute_instant(t.table(), ts, spark_runner)

    t.check()
    table = t.table()
    assert not table.timeline.states_of(crashed), "the failed instant leaves the timeline"
    assert not (t.path / ".hoodie" / ".heartbeat" / crashed).exists()
    assert not (t.path / ".hoodie" / ".temp" / crashed).exists()
    done = table.timeline.get(ts)
    assert done.is_completed and done.action == "rollback" and result.instant == done
    meta = parse_rollback_metadata(table.timeline.read(done))
    assert meta.commits_rollback == [crashed]
    action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    assert [(i.commit_time, i.action) for i in meta.instants_rollback] == [(crashed, action)]
    marked = {LogFileName.parse(p) for pm in meta.partition_metadata.values() for p in pm.log_files_from_failed_commit}
    command_files = [p for pm in meta.partition_metadata.values() for p in pm.rollback_log_files]
    assert meta.total_files_deleted == len(written) - len(marked)
    if table_type == "MERGE_ON_READ" and version == 6:
        assert marked and len(command_files) == len(marked), "appended blocks are rolled back by command blocks"
    else:
        assert not marked and not any((t.path / p).exists() for p in written)

    # Writers and table services carry on over the rolled-back blocks.
    t.write([rec(i, 100) for i in range(0, 40, 6)])
    if table_type == "MERGE_ON_READ":
        execute_instant(t.table(), plan_compaction(t.table()), spark_runner)
    t.check()
