"""End to end under the writers' lock: a table registered through the API with a file-system lock provider is
planned (the planner of `POST /tables/{id}:plan`) and executed (the worker's python job) under that lock,
waiting while another process holds it, as `hoodie.write.lock.wait_time_ms` and `client.num_retries` say;
and a writer that updates a file group being clustered (SparkAllowUpdateStrategy) wins: the clustering's task
ends with reason `conflict`, nothing is completed over the write, and hudi-rs reads the update."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import httpx
from support import REPO
from worker_support import ModelledTable, attempts, rec, register, wait_for, wait_until_final, write_history

from tms.db import TaskRepo, TaskState
from tms.execute.dispatch import executor_for
from tms.execute.fencing import no_fence
from tms.hudi.timeline.instant import State
from worker.claim import ClaimLimits, claim_next
from worker.commands import python_job, spark_job

CONTENDER = REPO / "tests" / "hudi" / "locks" / "lock_contender.py"
ALLOW_UPDATES = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
CLUSTER_EVERY_2 = {"hoodie.clustering.async.max.commits": 2}


def _lock_options(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
            "hoodie.write.lock.filesystem.path": str(tmp_path / "lock"),
            "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
            "hoodie.write.lock.client.wait_time_ms_between_retry": "100", **extra}


def _table(tmp_path: Path) -> ModelledTable:
    t = ModelledTable(tmp_path / "trips", "COPY_ON_WRITE", 8, max_file_records=10)
    write_history(t)
    return t


class Contender:
    """Another process taking the same lock (a writer's, as far as TMS can tell)."""
    _numbers = itertools.count()

    def __init__(self, base: Path, options: dict[str, str], *args: str):
        self.log = base.parent / f"contender-{next(self._numbers)}.log"
        self.process = subprocess.Popen(
            [sys.executable, str(CONTENDER), "--base", str(base), "--options", json.dumps(options),
             "--log", str(self.log), *args], stdout=subprocess.PIPE, text=True)

    def lines(self) -> list[str]:
        return [line.split()[0] for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _plan(service, table_id: int, action: str) -> httpx.Response:
    return httpx.post(f"{service.url}/api/v1/tables/{table_id}:plan", headers=service.admin, timeout=120,
                      json={"service": action})


def test_the_planner_and_the_worker_wait_for_the_writers_lock(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    t = _table(tmp_path)
    # Each take of the lock: up to 3 tries of 300 ms, 100 ms apart (about a second in all).
    options = _lock_options(tmp_path, **{"hoodie.write.lock.wait_time_ms": "300",
                                         "hoodie.write.lock.client.num_retries": "2"})
    table_id = register(service, t.path, **CLUSTER_EVERY_2, **options)
    before = t.table().timeline.instants()

    # Held for good by another process: TMS gives up after its retries and writes nothing.
    holder = Contender(t.path, options, "--hold-forever")
    try:
        assert holder.process.stdout.readline().strip() == "held"
        refused = _plan(service, table_id, "clustering")
        assert refused.status_code == 422, refused.text
        assert "unable to acquire the table lock after 3 attempt(s)" in refused.json()["detail"]
        assert t.table().timeline.instants() == before, "nothing planned without the lock"
    finally:
        holder.stop()
    (tmp_path / "lock" / "lock").unlink()  # what a dead holder leaves (no expiry set): an operator removes it

    # Held for a while: TMS waits for it (here with enough retries), then plans under it.
    httpx.patch(f"{service.url}/api/v1/tables/{table_id}", headers=service.admin, timeout=30, json={"policies": {
        "hoodie.write.lock.wait_time_ms": "500", "hoodie.write.lock.client.num_retries": "60"}}).raise_for_status()
    holder = Contender(t.path, options, "--rounds", "1", "--hold-ms", "2500")
    try:
        wait_for(lambda: holder.lines() == ["acquire"], what="the other process to take the lock")
        planned = _plan(service, table_id, "clustering")
        assert planned.status_code == 200, planned.text
        assert holder.lines() == ["acquire", "release"], "the plan was written after the other process let go"
    finally:
        holder.stop()
    [planned_task] = planned.json()["tasks"]
    instant = planned_task["instant"]
    assert instant > max(i.timestamp for i in before), "the plan's time is later than every instant"

    # The job completes under the lock while another process takes it too.
    holder = Contender(t.path, options, "--rounds", "5", "--hold-ms", "300")
    try:
        start_worker()
        done = wait_until_final(db, planned_task["id"], timeout=120)
        holder.process.wait(timeout=60)
    finally:
        holder.stop()
    assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, done.id)[-1].log_tail}"
    assert holder.lines() == ["acquire", "release"] * 5
    assert not (tmp_path / "lock" / "lock").exists(), "every holder released the lock"
    table = t.table()
    assert table.timeline.get(instant).is_completed
    times = [i.timestamp for i in table.timeline.instants()]
    assert len(times) == len(set(times)), "no two instants share a time"
    t.check()


def test_a_writer_updating_a_file_group_being_clustered_wins(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    t = _table(tmp_path)
    options = _lock_options(tmp_path)
    table_id = register(service, t.path, **CLUSTER_EVERY_2, **options)
    planned = _plan(service, table_id, "clustering")
    assert planned.status_code == 200, planned.text
    [planned_task] = planned.json()["tasks"]
    instant = planned_task["instant"]

    # The writer takes the same lock and writes its updates into the file groups being clustered.
    updates = [rec(i, 90, "update") for i in range(0, 30, 2)]
    records = tmp_path / "updates.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in updates))
    write = subprocess.run(
        [str(Path(sys.executable).parent / "tms"), "write", str(t.path), "--records", str(records),
         *[arg for k, v in {**options, "hoodie.clustering.updates.strategy": ALLOW_UPDATES}.items()
           for arg in ("--option", f"{k}={v}")]], capture_output=True, text=True, timeout=120)
    assert write.returncode == 0, write.stderr
    t.model.upsert(updates)

    start_worker()
    done = wait_until_final(db, planned_task["id"], timeout=120)

    assert done.state == TaskState.FAILED and done.failure_kind == "conflict", done.error
    assert done.retryable is False and done.next_attempt_at is None, "never retried: the next plan takes the data"
    assert "the job exited with status 3: error: conflict: clustering" in done.error
    table = t.table()
    assert State.COMPLETED not in table.timeline.states_of(instant), "nothing completed over the write"
    assert table.timeline.get(instant) is None, "the attempt and its plan were rolled back"
    t.check()  # hudi-rs reads the update


def test_the_job_is_given_the_table_s_lock_options(tmp_path, service, db, local_queue):
    local_queue()
    t = _table(tmp_path)
    options = _lock_options(tmp_path)
    table_id = register(service, t.path, **CLUSTER_EVERY_2, **options)
    assert _plan(service, table_id, "clustering").status_code == 200
    claimed = claim_next(db, "w1", ClaimLimits(lease_seconds=30, driver_memory_mb=512, driver_cores=1,
                                               max_executors_per_table=2))
    assert claimed.concurrency_options == options
    expected = [f"{k}={v}" for k, v in options.items()]
    for command in (spark_job(claimed, py_files=tmp_path / "tms-jobs.zip", fence_url="http://tms/fence")[0],
                    python_job(claimed, fence_url="http://tms/fence")[0]):
        given = [command[i + 1] for i, arg in enumerate(command) if arg == "--option"]
        assert sorted(given) == sorted(expected), command


def test_a_failed_attempt_is_rolled_back_only_under_the_lock(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    t = _table(tmp_path)
    options = _lock_options(tmp_path, **{"hoodie.write.lock.wait_time_ms": "200",
                                         "hoodie.write.lock.client.num_retries": "1"})
    table_id = register(service, t.path, **CLUSTER_EVERY_2, **options)
    [planned_task] = _plan(service, table_id, "clustering").json()["tasks"]
    instant = planned_task["instant"]
    executor_for(t.table(), instant).start(no_fence)  # an earlier attempt that died inflight
    holder = Contender(t.path, options, "--hold-forever")
    try:
        assert holder.process.stdout.readline().strip() == "held"
        start_worker()
        done = wait_until_final(db, planned_task["id"], timeout=120)
    finally:
        holder.stop()
    assert done.state == TaskState.FAILED and done.failure_kind == "lock_unavailable" and done.retryable, done.error
    assert "cannot start: unable to acquire the table lock after 2 attempt(s)" in done.error
    timeline = t.table().timeline
    assert State.INFLIGHT in timeline.states_of(instant), "not rolled back without the lock"
    assert timeline.pending(["rollback"]) == [], "no rollback planned without the lock"

    (tmp_path / "lock" / "lock").unlink()  # the killed holder's lock file (no expiry set)
    with db.transaction() as session:  # the manager's retry, without waiting for its backoff
        assert TaskRepo(session).retry(TaskRepo(session).get(done.id)) is not None
    again = wait_until_final(db, done.id, timeout=120)
    assert again.state == TaskState.SUCCEEDED, f"{again.error}\n{attempts(db, done.id)[-1].log_tail}"
    timeline = t.table().timeline
    assert timeline.get(instant).is_completed
    assert [r.is_completed for r in timeline.instants() if r.action == "rollback"] == [True], "the attempt's rollback"
    t.check()
