"""What a worker finds on storage is input: a plan another writer left on a registered table's timeline that
names files outside the table, or a registered table folder since replaced by a link to a folder outside the
storage roots, fails its task for good in one line (never retried), and nothing outside the table changes."""
import os
import shutil
import tempfile
from pathlib import Path

from worker_support import ModelledTable, attempts, plan, register, wait_until_final, write_history

from tms.db import TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import ActionInstant, CleanerPlan, CleanFileInfo, serialize_cleaner_plan


def _task_of(db, table_id: int, service: str, instant: str) -> int:
    with db.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table_id, service=service, instant=instant,
                                           state=TaskState.RUNNABLE)
        return task.id


def _refused_for_good(db, task_id: int, *words: str) -> None:
    done = wait_until_final(db, task_id, timeout=120)
    assert done.state == TaskState.FAILED, done.error
    assert done.failure_kind == "unsafe_plan", (done.failure_kind, done.error)
    assert len(attempts(db, task_id)) == 1, "an unsafe plan is never retried"
    assert all(w in (done.error or "") for w in words), done.error


def test_a_clean_plan_naming_files_outside_the_table_deletes_nothing(tmp_path, service, db, local_queue,
                                                                     start_worker):
    local_queue()
    t = ModelledTable(tmp_path / "root" / "t", "MERGE_ON_READ", 8)
    write_history(t)
    victim = tmp_path / "outside" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("keep")
    (tmp_path / "outside" / "victimdir").mkdir()
    table_id = register(service, t.path)
    table = HudiTable.load(str(t.path))
    last = table.timeline.last_completed()
    plan = CleanerPlan(
        earliest_instant_to_retain=ActionInstant(timestamp=last.timestamp, action=last.action, state="COMPLETED"),
        last_completed_commit_timestamp=last.timestamp, policy="KEEP_LATEST_COMMITS",
        file_paths_to_be_deleted_per_partition={"../../outside/victim": [CleanFileInfo(file_path="keep.txt")]},
        partitions_to_be_deleted=["../../outside/victimdir"])
    ts = table.timeline.create_requested(Action.CLEAN, serialize_cleaner_plan(plan)).timestamp
    start_worker()

    _refused_for_good(db, _task_of(db, table_id, "clean", ts), ts, "outside the table")

    assert (victim / "keep.txt").read_text() == "keep" and (tmp_path / "outside" / "victimdir").is_dir()
    assert set(HudiTable.load(str(t.path)).timeline.states_of(ts)) == {State.REQUESTED}, "never started"


def test_a_table_folder_replaced_by_a_link_outside_the_roots_is_refused(tmp_path, service, db, local_queue,
                                                                       start_worker):
    local_queue()
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    write_history(t)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    [task_id] = plan(db, table_id, "compaction")
    # The worker's storage root is the test's folder: this one is beside it.
    elsewhere = Path(tempfile.mkdtemp(prefix="tms-outside-roots-"))
    try:
        shutil.move(t.path, elsewhere / "t")
        os.symlink(elsewhere / "t", t.path)
        before = sorted(p.name for p in (elsewhere / "t").rglob("*"))
        start_worker(storage_roots=[str(tmp_path)])

        _refused_for_good(db, task_id, "outside the storage roots")

        assert sorted(p.name for p in (elsewhere / "t").rglob("*")) == before, "nothing written there"
    finally:
        shutil.rmtree(elsewhere)

