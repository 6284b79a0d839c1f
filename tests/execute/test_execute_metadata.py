"""Table services on tables with a metadata table (MDT), run in-process: TMS writes the MDT delta commit of
every instant it completes, so hudi-rs (which lists a v8+ table's files through the MDT) reads the same rows
as before and as the model says, `tms verify` finds nothing, and the table without its MDT reads the same."""
import os
import random
import shutil
from pathlib import Path

import pytest
from execute_support import (
    key,
    plan_clean_of_old_versions,
    plan_clustering,
    plan_compaction,
    plan_rollback_of_write,
    rec,
    write_history,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mdt_model import MDT_FIXTURES, MdtModelledTable, unzip_mdt_fixture, without_metadata_table
from support import hudi_rs_table, rows

from tms.execute.clean import CleanExecutor
from tms.execute.dispatch import execute_instant, executor_for
from tms.execute.fencing import no_fence
from tms.execute.retry import prepare_retry
from tms.execute.runner import LocalRunner
from tms.hudi.errors import UnsupportedTableError
from tms.hudi.fs_view.file_names import LogFileName
from tms.hudi.log_format.log_file import read_log_file
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.metadata.writer import unmaintainable_partitions
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.verify import verify_table
from tms.hudi.timeline.instant import Action, Instant, State
from tms.hudi.timeline.serde import parse_rollback_metadata

RUNNER = LocalRunner(1)
# Lance base files are read by another part of TMS (or refused): not served here.
PARQUET_FIXTURES = sorted(n for n in MDT_FIXTURES if "lance" not in n)


def _rows(path) -> list[dict]:
    t = hudi_rs_table(path)
    return rows(t, [c for c in t.column_names if c != "_hoodie_file_name"])


def _mdt_instant(path, ts: str):
    return MetadataTable(HudiTable.load(str(path))).table.timeline.states_of(ts)


@pytest.fixture(scope="module")
def mdt_fixture_root(tmp_path_factory):
    return tmp_path_factory.mktemp("mdt_fixture_src")


def _copy(mdt_fixture_root, tmp_path, name) -> Path:
    src = mdt_fixture_root / name
    if not src.exists():
        unzip_mdt_fixture(name, mdt_fixture_root)
    return Path(shutil.copytree(src / MDT_FIXTURES[name], tmp_path / name))


def _check_mdt(path: Path, before: list[dict]) -> None:
    assert _rows(path) == before
    assert verify_table(HudiTable.load(str(path))) == []
    bare = without_metadata_table(path, path.parent / (path.name + "-bare"))
    try:
        assert _rows(bare) == before
    finally:
        shutil.rmtree(bare)


@pytest.mark.parametrize("name", PARQUET_FIXTURES)
def test_fixture_services_keep_the_mdt_in_sync(tmp_path, mdt_fixture_root, name):
    path = _copy(mdt_fixture_root, tmp_path, name)
    before = _rows(path)
    table = HudiTable.load(str(path))
    has_logs = any(fs.log_files for fs in table.file_system_view().latest_slices())
    steps = ([plan_compaction] if has_logs else []) + [
        plan_clustering, lambda t: plan_clean_of_old_versions(t)[0]]
    for plan in steps:
        ts = plan(HudiTable.load(str(path)))
        execute_instant(HudiTable.load(str(path)), ts, RUNNER)
        done = HudiTable.load(str(path)).timeline.get(ts)
        assert done.is_completed
        mdt = _mdt_instant(path, ts)
        assert set(mdt) == {State.REQUESTED, State.INFLIGHT, State.COMPLETED}
        assert mdt[State.COMPLETED].action == Action.DELTA_COMMIT
        if done.completion_time:   # v8+: the MDT completed first
            assert mdt[State.COMPLETED].completion_time <= done.completion_time
        _check_mdt(path, before)


def test_hudi_rs_reads_through_the_mdt_so_a_stale_one_would_show(tmp_path, mdt_fixture_root):
    """The control that makes the tests above able to fail: without TMS's MDT delta commit, hudi-rs
    misses the clustering's files."""
    path = _copy(mdt_fixture_root, tmp_path, "mor_v9_txns_simple_meta")
    before = _rows(path)
    ts = plan_clustering(HudiTable.load(str(path)))
    execute_instant(HudiTable.load(str(path)), ts, RUNNER)
    assert _rows(path) == before
    timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    for f in timeline.glob(f"{ts}*"):
        f.unlink()
    assert _rows(path) != before
    assert any(p.check == "mdt_listing" for p in verify_table(HudiTable.load(str(path))))


TABLES = [(tt, v) for v in (6, 8, 9) for tt in ("COPY_ON_WRITE", "MERGE_ON_READ")]


@pytest.mark.parametrize("table_type,version", TABLES)
def test_writer_made_mdt_table_through_every_service(tmp_path, table_type, version):
    t = MdtModelledTable(tmp_path / "t", table_type, version)
    write_history(t)
    t.check()
    if table_type == "MERGE_ON_READ":
        execute_instant(t.table(), plan_compaction(t.table()), RUNNER)
        t.check()
    execute_instant(t.table(), plan_clustering(t.table()), RUNNER)
    t.check()
    index = MetadataTable(t.table()).records("record_index")
    assert len(index) == len(t.model.expected())
    execute_instant(t.table(), plan_clean_of_old_versions(t.table())[0], RUNNER)
    t.check()
    t.write([rec(i, 50) for i in range(0, 40, 4)])
    t.check()


@pytest.mark.parametrize("version", [6, 8])
def test_a_clean_run_again_after_its_task_deleted_files_takes_them_out_of_the_listing(tmp_path, version):
    """A clean task attempted again (its driver died after the task, or Spark retried the task) finds the files
    its first attempt deleted already gone and reports them failed, as Hudi's cleaner does; the files partition
    drops every file the clean set out to delete (Java: the clean's delete path patterns), so the metadata
    table never lists a file storage no longer has."""
    t = MdtModelledTable(tmp_path / "t", "COPY_ON_WRITE", version)
    write_history(t)
    ts, doomed = plan_clean_of_old_versions(t.table())
    crashed = CleanExecutor(t.table(), t.table().timeline.get(ts))
    first = crashed.task_function(crashed.start(no_fence)[0], "0-0-0")[0]  # then the driver dies
    assert first.deleted

    execute_instant(t.table(), ts, RUNNER)

    assert not any((t.path / p).exists() for p in doomed)
    t.check()  # the metadata table lists what storage holds


@pytest.mark.parametrize("table_type,version", [("MERGE_ON_READ", 6), ("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 9)])
def test_all_creatable_partitions_through_every_service(tmp_path, table_type, version):
    t = MdtModelledTable(tmp_path / "t", table_type, version,
                         partitions=["files", "column_stats", "record_index", "partition_stats", "bloom_filters"])
    write_history(t)
    t.check()
    if table_type == "MERGE_ON_READ":
        execute_instant(t.table(), plan_compaction(t.table()), RUNNER)
        t.check()
    execute_instant(t.table(), plan_clustering(t.table()), RUNNER)
    execute_instant(t.table(), plan_clean_of_old_versions(t.table())[0], RUNNER)
    t.check()
    mdt = MetadataTable(t.table())
    listed = {(p, n) for p, files in mdt.file_listing().items() for n in files if n.endswith(".parquet")}
    assert len(mdt.records("bloom_filters")) == len(listed) > 0
    stats = mdt.records("partition_stats")
    assert stats and all(r.column_stats["isTightBound"] for r in stats.values())


def _plan_rollback(table: HudiTable, instant: str) -> str:
    return plan_rollback_of_write(table, instant)


@pytest.mark.parametrize("table_type,version", TABLES)
def test_rollback_of_a_failed_write_that_synced_the_mdt(tmp_path, table_type, version):
    t = MdtModelledTable(tmp_path / "t", table_type, version)
    write_history(t)
    crashed = t.write([rec(i, 99, "crashed") for i in range(0, 40, 3)], leave_inflight=True)
    assert State.COMPLETED in _mdt_instant(t.path, crashed), "the crashed writer had synced its MDT"
    t.check()   # its MDT blocks are not read: the data instant is not completed
    ts = _plan_rollback(t.table(), crashed)

    execute_instant(t.table(), ts, RUNNER)

    t.forget(crashed)
    assert not _mdt_instant(t.path, crashed), "the MDT side of the failed write is undone"
    assert State.COMPLETED in _mdt_instant(t.path, ts)
    t.check()
    t.write([rec(i, 100) for i in range(0, 40, 6)])
    t.check()


class DriverKilledError(Exception):
    pass


@pytest.mark.parametrize("version", [6, 8, 9])
def test_attempt_killed_after_its_mdt_commit_is_rolled_back_there_too(tmp_path, version):
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", version)
    write_history(t)
    ts = plan_compaction(t.table())
    executor = executor_for(t.table(), ts)
    results = RUNNER.map(executor.task_function, executor.start(no_fence))

    def killed(*_a, **_k):
        raise DriverKilledError(ts)
    executor.timeline.complete = killed   # the driver dies between the MDT commit and the data commit
    with pytest.raises(DriverKilledError):
        executor.finish(results, no_fence)
    assert State.COMPLETED in _mdt_instant(t.path, ts)
    assert t.table().timeline.get(ts).state is State.INFLIGHT
    t.check()   # nothing of the dead attempt shows, through the MDT or not

    prepare_retry(t.table(), ts)
    assert not _mdt_instant(t.path, ts), "the retry's rollback undid the attempt's MDT commit"
    t.check()
    execute_instant(t.table(), ts, RUNNER)
    assert set(_mdt_instant(t.path, ts)) == {State.REQUESTED, State.INFLIGHT, State.COMPLETED}
    t.check()


def _mdt_rollbacks_of(path, ts: str) -> list[Instant]:
    """The completed rollback instants on the MDT timeline that rolled back its delta commit `ts`."""
    tl = MetadataTable(HudiTable.load(str(path))).table.timeline
    return [i for i in tl.completed([Action.ROLLBACK]) if parse_rollback_metadata(tl.read(i)).commits_rollback == [ts]]


def _mdt_log_files_with_blocks_of(path, ts: str) -> list[Path]:
    return [f for f in (Path(path) / ".hoodie" / "metadata").glob("*/.*.log.*")
            if any(b.instant_time == ts for b in read_log_file(f.read_bytes()))]


@pytest.mark.parametrize("table_type,version", TABLES)
def test_mdt_side_of_a_rollback_is_javas(tmp_path, table_type, version):
    """As HoodieBackedTableMetadataWriter.update(rollback): v8+ rolls the failed write's MDT delta commit back
    with a `rollback` instant of the data rollback's instant time, and writes no delta commit for it; v6
    records the rollback in a delta commit, then rolls the failed one back at the rollback's time + "006"."""
    t = MdtModelledTable(tmp_path / "t", table_type, version)
    write_history(t)
    crashed = t.write([rec(i, 99, "crashed") for i in range(0, 40, 3)], leave_inflight=True)
    assert _mdt_log_files_with_blocks_of(t.path, crashed)
    ts = _plan_rollback(t.table(), crashed)

    execute_instant(t.table(), ts, RUNNER)

    t.forget(crashed)
    (rollback,) = _mdt_rollbacks_of(t.path, crashed)
    assert rollback.timestamp == (ts if version >= 8 else ts + "006")
    assert not _mdt_instant(t.path, crashed)
    assert not _mdt_log_files_with_blocks_of(t.path, crashed), "its log files are deleted"
    at_ts = {i.action for i in _mdt_instant(t.path, ts).values()}
    assert at_ts == ({Action.ROLLBACK} if version >= 8 else {Action.DELTA_COMMIT})
    t.check()
    t.write([rec(i, 100) for i in range(0, 40, 6)])
    t.check()


def test_mdt_rollback_runs_before_the_failed_instant_leaves_the_data_timeline(tmp_path, monkeypatch):
    """A crash between the two never leaves a completed MDT delta commit whose data instant is gone (Java's
    readers count such a delta commit): the failed instant is still pending, the rollback runs again."""
    import tms.execute.rollback as rollback_module
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 9)
    write_history(t)
    crashed = t.write([rec(i, 99, "crashed") for i in range(0, 40, 3)], leave_inflight=True)
    ts = _plan_rollback(t.table(), crashed)

    def killed(*_a, **_k):
        raise DriverKilledError(ts)
    monkeypatch.setattr(rollback_module, "write_metadata_rollback", killed)
    with pytest.raises(DriverKilledError):
        execute_instant(t.table(), ts, RUNNER)
    assert t.table().timeline.states_of(crashed), "the failed instant is still pending"
    assert State.COMPLETED in _mdt_instant(t.path, crashed)
    monkeypatch.undo()

    execute_instant(t.table(), ts, RUNNER)

    t.forget(crashed)
    assert not t.table().timeline.states_of(crashed)
    assert [r.timestamp for r in _mdt_rollbacks_of(t.path, crashed)] == [ts]
    t.check()


def test_retry_marks_the_attempts_blocks_in_a_log_file_a_v6_writer_appended_to(tmp_path):
    """On a v6 MDT, Hudi's writers append their blocks to the latest log file of a slice, which may be the
    one holding a killed attempt's blocks: the retry's MDT rollback keeps the writer's blocks and marks the
    attempt's with a rollback command block; the retried delta commit of the same instant time counts."""
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    write_history(t)
    ts = plan_clustering(t.table())
    executor = executor_for(t.table(), ts)
    results = RUNNER.map(executor.task_function, executor.start(no_fence))

    def killed(*_a, **_k):
        raise DriverKilledError(ts)
    executor.timeline.complete = killed
    with pytest.raises(DriverKilledError):
        executor.finish(results, no_fence)
    attempt_logs = {LogFileName.parse(f.name).file_id: f for f in _mdt_log_files_with_blocks_of(t.path, ts)}
    # A Java writer's commit, its blocks appended to the attempt's log files where it has one.
    written = t.write([rec(i, 70) for i in range(100, 104)], "insert")
    shared = []
    for f in _mdt_log_files_with_blocks_of(t.path, written):
        target = attempt_logs.get(LogFileName.parse(f.name).file_id)
        if target is not None:
            target.write_bytes(target.read_bytes() + f.read_bytes())
            f.unlink()
            shared.append(target)
    assert shared, "the writer's commit shares a log file with the attempt"
    t.check()

    prepare_retry(t.table(), ts)

    (rollback,) = _mdt_rollbacks_of(t.path, ts)
    assert all(f.exists() for f in shared), "the shared log files keep the writer's blocks"
    assert not set(_mdt_log_files_with_blocks_of(t.path, ts)) - set(shared), "the attempt's own files are deleted"
    t.check()
    execute_instant(t.table(), ts, RUNNER)
    assert State.COMPLETED in _mdt_instant(t.path, ts)
    t.check()


def test_partitions_tms_cannot_maintain_are_named_and_refused(tmp_path):
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    write_history(t)
    table = t.table()
    for service in ("compaction", "clustering", "clean", "rollback"):
        assert unmaintainable_partitions(table, service) == []
    props = dict(table.config.props)
    table.config.props["hoodie.table.metadata.partitions"] = (
        props["hoodie.table.metadata.partitions"] + ",secondary_index_rider,expr_index_fare_bucket")
    assert unmaintainable_partitions(table, "compaction") == ["expr_index_fare_bucket"]
    assert unmaintainable_partitions(table, "rollback") == []
    from tms.hudi.table.properties import format_properties
    (t.path / ".hoodie" / "hoodie.properties").write_text(format_properties(table.config.props))
    ts = plan_compaction(t.table())
    with pytest.raises(UnsupportedTableError, match="expr_index_fare_bucket"):
        execute_instant(t.table(), ts, RUNNER)
    assert t.table().timeline.get(ts).state is State.REQUESTED, "refused before anything is written"


_STEPS = st.lists(st.sampled_from(["upsert", "insert", "delete", "compaction", "clustering", "clean", "crash"]),
                  min_size=3, max_size=7)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "6")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS, version=st.sampled_from([6, 8, 9]), table_type=st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]),
       seed=st.integers(0, 10_000))
def test_random_writes_and_services_keep_verify_clean(tmp_path_factory, steps, version, table_type, seed):
    rnd = random.Random(seed)
    t = MdtModelledTable(tmp_path_factory.mktemp("h") / "t", table_type, version)
    t.write([rec(i, 1) for i in range(12)], "insert")
    runner = LocalRunner(1)
    for n, step in enumerate(steps, start=2):
        table = t.table()
        if step in ("upsert", "insert"):
            t.write([rec(rnd.randrange(20), n) for _ in range(rnd.randrange(1, 8))], step)
        elif step == "delete":
            t.write([key(rnd.randrange(20)) for _ in range(rnd.randrange(1, 4))], "delete")
        elif step == "crash":
            crashed = t.write([rec(rnd.randrange(20), n)], leave_inflight=True)
            execute_instant(t.table(), _plan_rollback(t.table(), crashed), runner)
            t.forget(crashed)
        elif step == "compaction" and any(fs.log_files for fs in table.file_system_view().latest_slices()):
            execute_instant(table, plan_compaction(table), runner)
        elif step == "clustering":
            execute_instant(table, plan_clustering(table), runner)
        elif step == "clean":
            execute_instant(table, plan_clean_of_old_versions(table)[0], runner)
    t.check()
