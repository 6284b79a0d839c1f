"""A table-service attempt that dies part way leaves the table reading the same rows; its retry rolls the
attempt back (the plan goes back to requested) and then completes."""
import pytest
from execute_support import ModelledTable, plan_clustering, plan_compaction, rec, write_history

from tms.execute.dispatch import execute_instant
from tms.execute.errors import FencingError
from tms.execute.retry import prepare_retry
from tms.hudi.errors import InstantConflictError
from tms.hudi.fs_view.file_names import BaseFileName, write_token
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_rollback_metadata


class DriverKilledError(Exception):
    pass


class DyingRunner:
    """Runs the first `survivors` tasks, then dies as a driver killed between tasks does."""

    def __init__(self, survivors: int):
        self.survivors = survivors

    def map(self, fn, tasks, description="", sizes=None):
        for i, task in enumerate(tasks[:self.survivors]):
            fn(task, write_token(i))
        raise DriverKilledError(description)


def _files_of(path, instant: str) -> list:
    return [p for p in path.rglob("*.parquet") if (n := BaseFileName.parse(p.name)) and n.instant == instant]


@pytest.mark.parametrize("version,plan", [(6, plan_compaction), (8, plan_compaction), (8, plan_clustering)])
def test_attempt_killed_between_tasks_is_rolled_back_and_retried(tmp_path, spark_runner, version, plan):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", version)
    write_history(t)
    ts = plan(t.table())

    with pytest.raises(DriverKilledError):
        execute_instant(t.table(), ts, DyingRunner(survivors=2))

    partial = _files_of(t.path, ts)
    assert len(partial) >= 2 and t.table().timeline.get(ts).state is State.INFLIGHT
    t.check()  # nothing the dead attempt wrote is visible
    with pytest.raises(InstantConflictError, match="inflight"):
        execute_instant(t.table(), ts, spark_runner)

    rollback = prepare_retry(t.table(), ts)

    table = t.table()
    assert set(table.timeline.states_of(ts)) == {State.REQUESTED}, "the plan goes back to requested"
    assert not _files_of(t.path, ts) and not (t.path / ".hoodie" / ".temp" / ts).exists()
    meta = parse_rollback_metadata(table.timeline.read(rollback.instant))
    assert meta.commits_rollback == [ts] and meta.total_files_deleted == len(partial)
    t.check()
    assert prepare_retry(t.table(), ts) is None, "nothing left to roll back"

    execute_instant(t.table(), ts, spark_runner)
    assert t.table().timeline.get(ts).is_completed
    t.check()
    t.write([rec(i, 70) for i in range(5)])
    t.check()


def test_retry_that_died_while_rolling_back_is_finished_not_replanned(tmp_path, spark_runner):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    write_history(t)
    ts = plan_compaction(t.table())
    with pytest.raises(DriverKilledError):
        execute_instant(t.table(), ts, DyingRunner(survivors=2))
    with pytest.raises(DriverKilledError):
        prepare_retry(t.table(), ts, runner=DyingRunner(survivors=1))
    [pending] = t.table().timeline.pending(["rollback"])
    t.check()

    rollback = prepare_retry(t.table(), ts)

    assert rollback.instant.timestamp == pending.timestamp and not t.table().timeline.pending(["rollback"])
    assert not _files_of(t.path, ts) and set(t.table().timeline.states_of(ts)) == {State.REQUESTED}
    execute_instant(t.table(), ts, spark_runner)
    t.check()


def test_attempt_that_lost_its_lease_cannot_complete(tmp_path, spark_runner):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    write_history(t)
    ts = plan_compaction(t.table())
    checks = []

    def fence():  # the lease is taken over after the tasks ran
        checks.append(1)
        if len(checks) > 1:
            raise FencingError("lease lost")

    with pytest.raises(FencingError):
        execute_instant(t.table(), ts, spark_runner, fence)
    assert t.table().timeline.get(ts).state is State.INFLIGHT
    t.check()
