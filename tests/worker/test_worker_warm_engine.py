"""A queue's warm engine: a compaction whose sized job fits its executors runs there, without a spark-submit
of its own (and, while the engine first starts, at once as a plain Python job), and a bigger one gets a
dedicated job; an archive task's job runs in the engine's driver, without a process of its own; an operator's
cancel stops a plan on the engine (its Spark job group) and the engine goes on; an engine killed mid-plan fails
the attempt, is restarted, and the retry completes on the new engine. hudi-rs reads exactly the model's rows
afterwards. Real Spark."""
import os
import signal
import threading

import httpx
import pytest
from worker_support import (
    ModelledTable,
    attempts,
    final_attempt,
    plan,
    processes_with,
    rec,
    register,
    task,
    wait_for,
    wait_until_final,
    write_history,
)

from jobs.warm_engine import requested_job
from tms.db import TaskRepo, TaskState
from tms.hudi.timeline.instant import Action
from worker.sizing import JobResources
from worker.warm_engine import EngineSpec

SPARK = {"worker_runner": "spark"}
WARM = {"warm_engine_enabled": True, "warm_engine_executors": 2, "warm_engine_executor_memory_mb": 1024}
COMPACT_EVERY_1 = {"hoodie.compact.inline.max.delta.commits": 1}
# keep 2..4 commits; the cleaner retains 1 (so it does not widen the limits)
ARCHIVE_SMALL = {"hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4, "hoodie.cleaner.commits.retained": 1}


class SparkSubmits:
    """Records every table path that a spark-submit JVM of jobs/run.py named while it watched."""

    def __init__(self):
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        while not self._stop.wait(0.1):
            for pid in processes_with("SparkSubmit", "run.py"):
                try:
                    self.seen.add(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
                except OSError:
                    pass

    def named(self, path) -> bool:
        return any(f"\0{path}\0" in cmdline for cmdline in self.seen)

    def stop(self):
        self._stop.set()
        self._thread.join()


def _warm_engine(worker):
    engine = wait_for(lambda: worker.warm_engines and worker.warm_engines.engine("local"), what="the warm engine")
    wait_for(lambda: engine.app_id, timeout=180, what="the warm engine to start")
    return engine


def test_an_engine_takes_the_plans_that_fit_its_executors():
    spec = EngineSpec(queue="q", kind="standalone", master="spark://h:7077", spark_conf=(("spark.x", "1"),),
                      executors=2, executor_memory_mb=1024, executor_cores=1, driver_memory_mb=512, driver_cores=1)
    sized = JobResources(executor_memory_mb=1024, executors=2, executor_cores=1, driver_memory_mb=512,
                         driver_cores=1, largest_file_group_bytes=10)
    assert spec.fits(sized)
    assert not spec.fits(JobResources(**{**sized.as_dict(), "executors": 3}))
    assert not spec.fits(JobResources(**{**sized.as_dict(), "executor_memory_mb": 1536}))
    conf = spec.submit_conf()
    assert (conf["spark.x"], conf["spark.cores.max"], conf["spark.executor.memory"]) == ("1", "2", "1024m")
    assert conf["spark.dynamicAllocation.enabled"] == "false"
    local = EngineSpec(**{**spec.__dict__, "kind": "local", "master": "local[*]"})
    assert local.submit_master() == "local[2]"


def test_an_engine_runs_no_request_job_but_archivals():
    assert requested_job({"op": "run", "args": []}) is None  # a plan
    assert requested_job({"op": "run", "job": "jobs.archive_job", "args": []}) == "jobs.archive_job"
    for hostile in ("jobs.backup_job", "os", "subprocess", "jobs.archive_job.x", ""):
        with pytest.raises(ValueError, match="does not run on a warm engine"):
            requested_job({"op": "run", "job": hostile, "args": []})


@pytest.mark.slow
def test_a_small_compaction_runs_on_the_warm_engine_and_a_big_one_on_a_dedicated_job(
        tmp_path, service, db, local_queue, start_worker):
    local_queue(**WARM)
    small = ModelledTable(tmp_path / "small", "MERGE_ON_READ", 6)  # one file group (one city)
    small.write([rec(i, 10) for i in range(0, 30, 3)], "insert")
    small.write([rec(i, 20) for i in range(0, 30, 6)])
    big = ModelledTable(tmp_path / "big", "MERGE_ON_READ", 6)  # three file groups: three executors
    write_history(big)
    small_id = register(service, small.path, **COMPACT_EVERY_1)
    [first_task] = plan(db, small_id, "compaction")
    submits = SparkSubmits()
    try:
        worker = start_worker(**SPARK)
        # While the engine first starts, a small plan does not wait for it: it runs as a plain Python job.
        done = wait_until_final(db, first_task, timeout=180)
        assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, first_task)[-1].log_tail}"
        early = final_attempt(db, first_task)
        assert early.engine_kind == "dedicated" and early.spark_app_id is None and not submits.named(small.path)
        engine = _warm_engine(worker)
        small.write([rec(i, 30) for i in range(0, 30, 6)])
        [small_task] = plan(db, small_id, "compaction")
        [big_task] = plan(db, register(service, big.path, **COMPACT_EVERY_1), "compaction")
        for task_id in (small_task, big_task):
            done = wait_until_final(db, task_id, timeout=180)
            assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, task_id)[-1].log_tail}"
        archived = ModelledTable(tmp_path / "archived", "COPY_ON_WRITE", 8)
        for n in range(6):
            archived.write([rec(i, 10 + n) for i in range(n, n + 3)])
        completed = [i.timestamp for i in archived.table().timeline.completed()]
        answer = httpx.post(f"{service.url}/api/v1/tables/{register(service, archived.path, **ARCHIVE_SMALL)}:plan",
                            json={"service": "archive"}, headers=service.admin, timeout=30)
        [archive_task] = [t["id"] for t in answer.json()["tasks"]]
        done = wait_until_final(db, archive_task, timeout=120)
        assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, archive_task)[-1].log_tail}"
    finally:
        submits.stop()

    on_engine = final_attempt(db, archive_task)  # in the engine's driver: no process started for it
    assert on_engine.engine_kind == "warm" and on_engine.spark_app_id == engine.app_id
    assert (on_engine.result["archived"], on_engine.result["archived_through"]) == (4, completed[3])
    assert [i.timestamp for i in archived.table().timeline.completed()] == completed[4:]
    archived.check()

    on_warm = final_attempt(db, small_task)
    assert on_warm.engine_kind == "warm" and on_warm.spark_app_id == engine.app_id
    assert on_warm.result["instant"] == task(db, small_task).instant
    assert on_warm.result["completed_as"] == "commit" and on_warm.result["files_written"] > 0
    assert not submits.named(small.path), "no spark-submit was started for the small compaction"
    dedicated = final_attempt(db, big_task)
    assert dedicated.engine_kind == "dedicated" and dedicated.requested_resources["executors"] == 3
    assert dedicated.spark_app_id and dedicated.spark_app_id != engine.app_id
    assert submits.named(big.path), "the big compaction had a spark-submit of its own"
    assert engine.starts == 1
    for t in (small, big):
        assert t.table().timeline.get(task(db, small_task if t is small else big_task).instant).is_completed
        t.check()


def _on_the_engine(tmp_path, db, task_id: int, attempt: int, markers) -> None:
    """Wait until the attempt's plan runs on the warm engine and has written its first file."""
    wait_for(lambda: task(db, task_id).attempt == attempt and task(db, task_id).state == TaskState.RUNNING,
             what=f"attempt {attempt}")
    log = tmp_path / "worker" / "jobs" / f"task-{task_id}-attempt-{attempt}.log"
    wait_for(lambda: log.exists() and "warm engine, job group" in log.read_text(), timeout=120, what="the plan")
    wait_for(lambda: markers.exists() and any(markers.rglob("*.marker.*")), timeout=120, what="the first file")


@pytest.mark.slow
def test_a_warm_plan_is_cancelled_and_a_killed_engine_fails_the_attempt_restarts_and_the_retry_completes(
        tmp_path, service, db, local_queue, start_worker):
    local_queue(max_executors=2, **WARM)
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6, max_file_records=20)
    t.write([rec(i, 10) for i in range(1200)], "insert")  # 60 file groups, on two executors
    t.write([rec(i, 20) for i in range(0, 1200, 2)])
    table_id = register(service, t.path, **COMPACT_EVERY_1)
    worker = start_worker(**SPARK, retry_backoff_seconds=0)
    engine = _warm_engine(worker)  # planned once it runs: not a Python job while the engine first starts
    first_app = engine.app_id
    [task_id] = plan(db, table_id, "compaction")
    tc = task(db, task_id).instant
    markers = t.path / ".hoodie" / ".temp" / tc

    # An operator's cancel: the plan's Spark job group is cancelled; the engine goes on.
    _on_the_engine(tmp_path, db, task_id, 1, markers)
    response = httpx.post(f"{service.url}/api/v1/tasks/{task_id}:cancel", headers=service.admin)
    assert response.status_code == 200 and response.json()["state"] == "CANCELLED"
    wait_for(lambda: not worker.running, timeout=60, what="the worker to cancel the plan")
    [cancelled] = attempts(db, task_id)
    assert cancelled.outcome == "CANCELLED" and cancelled.engine_kind == "warm"
    assert "cancel" in cancelled.log_tail.lower()
    assert not t.table().timeline.get(tc).is_completed
    assert (engine.starts, engine.app_id) == (1, first_app), "the engine still runs"
    t.check()

    # The engine killed mid-plan: the attempt fails, the engine restarts, the retry completes there.
    assert httpx.post(f"{service.url}/api/v1/tasks/{task_id}:rerun", headers=service.admin).status_code == 200
    _on_the_engine(tmp_path, db, task_id, 2, markers)
    [jvm] = processes_with("SparkSubmit", "warm_engine.py")
    os.kill(jvm, signal.SIGKILL)

    failed = wait_until_final(db, task_id)
    assert failed.state == TaskState.FAILED and failed.retryable, failed.error
    assert f"the warm engine {first_app} of queue local died while it ran the plan" in failed.error
    wait_for(lambda: engine.starts == 2 and engine.app_id, timeout=180, what="the engine to restart")
    assert engine.app_id != first_app
    with db.transaction() as session:  # what the manager's retries do when the retry is due
        tasks = TaskRepo(session)
        assert [tasks.retry(due) is not None for due in tasks.due_retries()] == [True]

    done = wait_until_final(db, task_id, timeout=180)
    assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, task_id)[-1].log_tail}"
    _, killed, retry = attempts(db, task_id)
    assert (killed.outcome, killed.engine_kind, killed.spark_app_id) == ("FAILED", "warm", first_app)
    assert (retry.outcome, retry.engine_kind, retry.spark_app_id) == ("SUCCEEDED", "warm", engine.app_id)
    table = t.table()
    assert table.timeline.get(tc).is_completed
    assert any(i.action == Action.ROLLBACK and i.is_completed
               for i in table.timeline.instants()), "partial attempt undone"
    assert processes_with("SparkSubmit", "run.py", str(t.path)) == []
    t.check()
