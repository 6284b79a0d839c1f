"""A compaction or clustering refuses file groups that lost a file (missing, truncated, an empty log file) instead
of writing a slice without it: one line naming the file, the plan left requested, nothing written. Files the
table no longer needs (compacted, superseded) are not looked for."""
import pytest
from execute_support import ModelledTable, plan_clustering, plan_compaction, rec, write_history

from tms.execute.compaction import CompactionExecutor, compact_file_group
from tms.execute.dispatch import execute_instant
from tms.execute.fencing import no_fence
from tms.execute.runner import LocalRunner
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.lost_files import DamagedFilesError, damaged_files, written_files
from tms.hudi.timeline.instant import State


def _table(tmp_path, version):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", version)
    write_history(t)
    return t


def _refused(t, instant, match):
    with pytest.raises(DamagedFilesError, match=match) as refused:
        execute_instant(t.table(), instant, LocalRunner(1))
    assert len(str(refused.value).splitlines()) == 1
    assert set(t.table().timeline.states_of(instant)) == {State.REQUESTED}  # nothing started
    return str(refused.value)


@pytest.mark.parametrize("version", [6, 8])
def test_compaction_refuses_an_empty_log_file_a_commit_wrote(tmp_path, version):
    t = _table(tmp_path, version)
    log = sorted((f for f in written_files(t.table()) if f.is_log), key=lambda f: f.path)[0]
    tc = plan_compaction(t.table())
    (t.path / log.path).write_bytes(b"")
    message = _refused(t, tc, "missing or damaged file")
    assert f"compaction {tc}: missing or damaged file {log.path}: empty log file" in message


@pytest.mark.parametrize("version", [6, 8])
def test_compaction_refuses_a_file_group_whose_base_file_is_lost(tmp_path, version):
    """The planner's view of storage no longer sees the base file: the plan names the logs only; compacting them
    alone would make a base file of the updates and lose every other record of the file group."""
    t = _table(tmp_path, version)
    table = t.table()
    slice_ = next(fs for fs in table.file_system_view().latest_slices() if fs.base_file and fs.log_files)
    (t.path / slice_.base_file.path).unlink()
    tc = plan_compaction(t.table())
    assert f"{slice_.base_file.path}: not found on storage" in _refused(t, tc, "missing or damaged file")


def test_a_compaction_task_refuses_an_input_lost_after_the_driver_looked(tmp_path):
    """The merge readers' own check: a task's input gone or emptied since the driver looked is named, never read
    as a file without blocks."""
    t = _table(tmp_path, 8)
    tc = plan_compaction(t.table())
    table = t.table()
    [task, *_] = [task for task in CompactionExecutor(table, table.timeline.get(tc)).start(no_fence)
                  if task.base_file and task.log_files]
    (t.path / task.log_files[0]).write_bytes(b"")
    with pytest.raises(DamagedFilesError, match=f"file group {task.file_id}: missing or damaged file "
                                                f"{task.log_files[0]}: empty log file"):
        compact_file_group(task, "0-0-0")
    (t.path / task.base_file).unlink()
    with pytest.raises(DamagedFilesError, match=f"{task.base_file}: not found on storage"):
        compact_file_group(task, "0-0-0")


@pytest.mark.parametrize("version", [6, 8])
def test_clustering_refuses_a_truncated_log_file(tmp_path, version):
    t = _table(tmp_path, version)
    log = sorted((f for f in written_files(t.table()) if f.is_log), key=lambda f: f.path)[0]
    instant = plan_clustering(t.table())
    data = (t.path / log.path).read_bytes()
    (t.path / log.path).write_bytes(data[:10])
    assert f"{log.path}: truncated: 10 bytes" in _refused(t, instant, "missing or damaged file")


@pytest.mark.parametrize("version", [6, 8])
def test_files_a_compaction_took_are_no_longer_looked_for(tmp_path, version):
    t = _table(tmp_path, version)
    before = {f.path for f in written_files(t.table())}
    execute_instant(t.table(), plan_compaction(t.table()), LocalRunner(1))
    t.write([rec(i, 40) for i in range(3)])
    after = {f.path for f in written_files(t.table())}
    compacted = before - after
    # the compacted slices' log files, and their base files the new ones supersede
    assert {p.rsplit("/", 1)[-1].startswith(".") for p in compacted} == {True, False}
    for path in compacted:  # as a clean removes them
        (t.path / path).unlink()
    assert damaged_files(HudiTable.load(str(t.path))) == []
    t.check(hudi_rs=False)
