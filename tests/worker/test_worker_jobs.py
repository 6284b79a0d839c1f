"""The worker's hold on a running Spark job: an operator's cancel and the timeout kill it (the whole process
group); a job SIGKILLed mid-write leaves the table correct for hudi-rs, its retry rolling back the partial
attempt first; a worker SIGKILLed takes its job with it, and another worker takes the task over. Real
spark-submit on local[1]; each job is stopped within seconds of its start."""
import os
import signal
import subprocess
import sys

import httpx
from support import REPO
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

from tms.db import TaskState
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.timeline.instant import Action, State

SPARK = {"worker_runner": "spark", "worker_lease_seconds": 4}


def _compaction(tmp_path, service, db, **writer_options):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6, **writer_options)
    return t, register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})


def _job_started(db, task_id: int, instant: str) -> list[int]:
    """Wait until the task runs and its spark-submit JVM is up; its pids."""
    wait_for(lambda: task(db, task_id).state == TaskState.RUNNING, what="the claim")
    return wait_for(lambda: processes_with("SparkSubmit", instant), what="spark-submit")


def test_cancel_kills_the_running_job(tmp_path, service, db, local_queue, start_worker):
    local_queue(master="local[1]")
    t, table_id = _compaction(tmp_path, service, db)
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    worker = start_worker(**SPARK)
    instant = task(db, task_id).instant
    _job_started(db, task_id, instant)
    log = tmp_path / "worker" / "jobs" / f"task-{task_id}-attempt-1.log"
    wait_for(lambda: "SparkContext" in log.read_text(), what="Spark to start")

    response = httpx.post(f"{service.url}/api/v1/tasks/{task_id}:cancel", headers=service.admin)
    assert response.status_code == 200 and response.json()["state"] == "CANCELLED"

    wait_for(lambda: not worker.running, timeout=30, what="the worker to notice the cancel")
    assert processes_with(instant) == [], "spark-submit, its driver and its Python workers are gone"
    attempt = final_attempt(db, task_id)
    assert attempt.outcome == "CANCELLED" and attempt.error == "cancelled by an operator"
    assert "SparkContext" in attempt.log_tail
    assert task(db, task_id).state == TaskState.CANCELLED
    assert State.COMPLETED not in t.table().timeline.states_of(instant)
    t.check()


def test_a_job_past_its_timeout_is_killed_and_its_attempt_fails(tmp_path, service, db, local_queue, start_worker):
    local_queue(master="local[1]")
    t, table_id = _compaction(tmp_path, service, db)
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    start_worker(**SPARK, worker_job_timeout_seconds=3)

    done = wait_until_final(db, task_id, timeout=60)

    assert done.state == TaskState.FAILED and "timeout of 3 s" in done.error
    assert processes_with(done.instant) == []
    attempt = final_attempt(db, task_id)
    assert attempt.outcome == "FAILED" and attempt.log_tail
    t.check()


def test_a_job_killed_mid_write_leaves_the_table_correct_and_the_retry_completes(tmp_path, service, db,
                                                                                 local_queue, start_worker):
    local_queue(master="local[1]")
    t, table_id = _compaction(tmp_path, service, db, max_file_records=20)
    t.write([rec(i, 10) for i in range(1200)], "insert")  # 60 file groups
    t.write([rec(i, 20) for i in range(0, 1200, 2)])
    [task_id] = plan(db, table_id, "compaction")
    spark_worker = start_worker(**SPARK)
    tc = task(db, task_id).instant
    markers = t.path / ".hoodie" / ".temp" / tc
    _job_started(db, task_id, tc)
    wait_for(lambda: markers.exists() and any(markers.rglob("*.marker.*")), timeout=120, what="the first file")
    [spark_submit] = processes_with("SparkSubmit", tc)  # the JVM spark-submit became (the driver is its child)
    os.kill(spark_submit, signal.SIGKILL)

    failed = wait_until_final(db, task_id)
    assert failed.state == TaskState.FAILED and "killed by signal 9" in failed.error
    assert processes_with(tc) == []
    assert t.table().timeline.get(tc).state is State.INFLIGHT, "killed mid-write"
    t.check()

    spark_worker.stop()
    response = httpx.post(f"{service.url}/api/v1/tasks/{task_id}:rerun", headers=service.admin)
    assert response.status_code == 200
    start_worker()  # the retry runs in a plain Python job: what matters here is the rollback before it

    assert wait_until_final(db, task_id).state == TaskState.SUCCEEDED
    assert [a.outcome for a in attempts(db, task_id)] == ["FAILED", "SUCCEEDED"]
    table = t.table()
    assert table.timeline.get(tc).is_completed
    assert any(i.action == Action.ROLLBACK and i.is_completed
               for i in table.timeline.instants()), "partial attempt undone"
    written = {s.path for s in table.timeline.commit_metadata(table.timeline.get(tc)).write_stats()}
    on_disk = {p.relative_to(t.path).as_posix() for p in t.path.rglob("*.parquet")
               if BaseFileName.parse(p.name).instant == tc}
    assert on_disk == written, "no file of the killed attempt is left"
    t.check()


def test_a_worker_killed_outright_takes_its_job_with_it_and_another_worker_takes_over(
        tmp_path, service, db, local_queue, start_worker):
    local_queue(master="local[1]")
    t, table_id = _compaction(tmp_path, service, db)
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env.update(TMS_DATABASE_URL=db.url, TMS_DATA_DIR=str(tmp_path / "dead"), TMS_WORKER_SERVICE_URL=service.url,
               TMS_WORKER_LEASE_SECONDS="4", TMS_WORKER_POLL_SECONDS="0.2", TMS_MIGRATE_ON_START="false")
    doomed = subprocess.Popen([sys.executable, "-m", "tms.cli", "worker"], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _job_started(db, task_id, task(db, task_id).instant)
    finally:
        doomed.kill()  # SIGKILL: no handler runs, no lease is given back
        doomed.wait()

    instant = task(db, task_id).instant
    wait_for(lambda: processes_with(instant) == [], timeout=5, what="the orphaned job to die at once")
    start_worker()  # hands the expired lease back and runs the task again

    assert wait_until_final(db, task_id).state == TaskState.SUCCEEDED
    assert [a.outcome for a in attempts(db, task_id)] == ["LOST", "SUCCEEDED"]
    t.check()
