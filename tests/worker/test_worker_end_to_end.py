"""End to end through the service: a writer commits and posts Hudi's callbacks, the planner plans, the
worker runs the job, the instant completes, and hudi-rs reads exactly the model's rows. Compaction on
spark-submit (local and a standalone cluster), clustering on spark-submit, and every table service on COW and
MOR, v6 and v8, in plain Python jobs; the compensation scenario of invariant 3 run to the end."""
import sys
import threading

import pytest
from spark_cluster import standalone_cluster
from sqlalchemy import select
from worker_support import (
    ModelledTable,
    attempts,
    final_attempt,
    plan,
    rec,
    register,
    task,
    wait_for,
    wait_until_final,
    write_history,
)

from tms.db import TaskRepo, TaskState
from tms.db.models import Event
from tms.hudi.timeline.instant import State

COMPACT_EVERY_2 = {"hoodie.compact.inline.max.delta.commits": 2}
SPARK = {"worker_runner": "spark"}


def _run(db, task_ids: list[int], timeout: float = 300) -> None:  # spark-submit on a loaded machine
    for task_id in task_ids:
        done = wait_until_final(db, task_id, timeout)
        assert done.state == TaskState.SUCCEEDED, f"{done.service}: {done.error}\n{attempts(db, task_id)[-1].log_tail}"


def _tasks(db, table_id: int, action: str) -> list[int]:
    with db.transaction() as session:
        return [t.id for t in TaskRepo(session).find(table_id=table_id, service=action)[0]]


def _events(db, table_id: int) -> list[tuple[str, str, str]]:
    with db.transaction() as session:
        return [(e.action, e.state, e.source)
                for e in session.scalars(select(Event).where(Event.table_id == table_id).order_by(Event.id))]


def test_compaction_through_the_service_on_spark(tmp_path, service, db, local_queue, start_planner, start_worker):
    """The whole pipeline: callbacks -> events -> the planner role plans -> the worker role runs it."""
    local_queue()
    t = ModelledTable(tmp_path / "trips", "MERGE_ON_READ", 8, service=service)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 4})
    start_planner()
    start_worker(**SPARK)
    write_history(t)  # four delta commits: the fourth makes a compaction due
    assert _events(db, table_id) == [("deltacommit", "completed", "hudi_callback")] * 4, "the callbacks"
    [task_id] = wait_for(lambda: _tasks(db, table_id, "compaction"), what="the planner to plan a compaction")

    _run(db, [task_id])

    done = task(db, task_id)
    assert t.table().timeline.get(done.instant).is_completed
    attempt = final_attempt(db, task_id)
    assert attempt.outcome == "SUCCEEDED"
    assert attempt.result["action"] == "compaction" and attempt.result["instant"] == done.instant
    assert attempt.result["completed_as"] == "commit" and attempt.result["completion_time"]
    assert attempt.requested_resources["executors"] == done.plan_stats["operations"]
    t.check()


def test_clustering_through_the_service_on_spark(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    t = ModelledTable(tmp_path / "trips", "COPY_ON_WRITE", 6, service=service, max_file_records=10)
    table_id = register(service, t.path, **{"hoodie.clustering.async.max.commits": 2})
    write_history(t)
    [task_id] = plan(db, table_id, "clustering")
    start_worker(**SPARK)

    _run(db, [task_id])

    table = t.table()
    assert table.timeline.get(task(db, task_id).instant).is_completed
    assert len(table.file_system_view().latest_slices()) == 3, "one file group per partition"
    t.check()


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("version", [6, 8])
def test_every_table_service_end_to_end(tmp_path, service, db, local_queue, start_worker, table_type, version):
    local_queue()
    t = ModelledTable(tmp_path / "trips", table_type, version, service=service, max_file_records=10)
    table_id = register(service, t.path, **COMPACT_EVERY_2, **{
        "hoodie.clustering.async.max.commits": 2, "hoodie.cleaner.commits.retained": 1,
        "hoodie.client.heartbeat.tolerable.misses": 0})
    write_history(t)
    start_worker()

    if table_type == "MERGE_ON_READ":
        _run(db, plan(db, table_id, "compaction"))
        t.check()
    [clustering] = plan(db, table_id, "clustering")
    _run(db, [clustering])
    t.check()
    t.write([rec(i, 90) for i in range(0, 30, 4)])
    before = {p for p in t.path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    [clean] = plan(db, table_id, "clean")
    _run(db, [clean])
    after = {p for p in t.path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert after < before, "the replaced and old file versions are gone"
    t.check()

    failed = t.write([rec(i, 95, "failed") for i in range(5)], leave_inflight=True)
    t.forget(failed)
    [rollback] = plan(db, table_id, "rollback")
    _run(db, [rollback])
    assert t.table().timeline.states_of(failed) == {}, "the failed write is gone from the timeline"
    t.check()


class Heartbeats:
    """The heartbeats of writers still at work: touched every half second until the writer stops."""

    def __init__(self, t: ModelledTable):
        self.t, self.live, self._stop = t, set(), threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _beat(self):
        while not self._stop.wait(0.5):
            for instant in list(self.live):
                self.t.table().storage.touch(f".hoodie/.heartbeat/{instant}")

    def stop(self):
        self._stop.set()
        self._thread.join()


def test_compensation_for_late_commits_run_to_the_end(tmp_path, service, db, local_queue, start_planner,
                                                      start_worker):
    """Invariant 3 through the planner and worker roles: a v6 compaction planned while dc1 and dc2 are in
    flight is held; dc3 lands after it; dc1 completes and joins the plan; dc2's writer dies, its heartbeat
    expires and it is rolled back; then the compaction runs: the rows of dc1 and dc3, none of dc2."""
    local_queue()
    t = ModelledTable(tmp_path / "trips", "MERGE_ON_READ", 6, service=service, new_log_file_per_commit=True)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1,
                                            "hoodie.client.heartbeat.interval_in_ms": 1000,
                                            "hoodie.client.heartbeat.tolerable.misses": 2})
    t.write([rec(i, 10) for i in range(9)], "insert")
    t.write([rec(i, 20) for i in range(3)])
    writers = Heartbeats(t)
    try:
        dc1 = t.write([rec(0, 30, "late"), rec(3, 30, "late")], leave_inflight=True)
        writers.live.add(dc1)
        dc2 = t.write([rec(1, 30, "doomed")], leave_inflight=True)
        writers.live.add(dc2)
        start_planner()  # its first scan plans the compaction, held by both
        [compaction] = wait_for(lambda: _tasks(db, table_id, "compaction"), what="the compaction plan")
        held = task(db, compaction)
        assert held.state == TaskState.BLOCKED and held.blockers == [dc1, dc2]
        start_worker()

        t.write([rec(6, 40, "after"), rec(5, 40, "after")])  # dc3, after Tc: into the new slices
        writers.live.discard(dc2)  # dc2's writer dies
        writers.live.discard(dc1)
        t.complete(dc1)
        t.forget(dc2)
        [rollback] = wait_for(lambda: _tasks(db, table_id, "rollback"), what="dc2's heartbeat to expire")
        _run(db, [rollback, compaction])
    finally:
        writers.stop()

    assert task(db, rollback).target_instant == dc2
    assert t.table().timeline.get(held.instant).is_completed and t.table().timeline.states_of(dc2) == {}
    t.check()
    names = {r["name"] for r in t.model.expected()}
    assert {"late", "after"} <= names and "doomed" not in names


@pytest.fixture
def standalone_master(tmp_path):
    with standalone_cluster(tmp_path / "spark-work") as url:
        yield url


def test_compaction_on_a_standalone_cluster(tmp_path, service, db, local_queue, start_worker, standalone_master):
    local_queue("cluster", kind="standalone", master=standalone_master, max_executor_memory_mb=1024,
                spark_conf={"spark.pyspark.python": sys.executable, "spark.ui.enabled": "false"})
    t = ModelledTable(tmp_path / "trips", "MERGE_ON_READ", 6, service=service)
    table_id = register(service, t.path, **COMPACT_EVERY_2)
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    start_worker(**SPARK)

    _run(db, [task_id])

    attempt = final_attempt(db, task_id)
    assert attempt.queue == "cluster" and attempt.spark_app_id.startswith("app-")
    assert task(db, task_id).spark_app_id == attempt.spark_app_id
    assert State.COMPLETED in t.table().timeline.states_of(task(db, task_id).instant)
    t.check()
