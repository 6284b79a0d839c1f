"""One executor per plan (invariant 4): the fence endpoint answers yes only to the attempt holding the live
lease; a worker whose lease was taken over cannot start or complete the instant; two workers claiming from
the same tables never run one task twice."""
import httpx
from sqlalchemy import text
from worker_support import (
    ModelledTable,
    attempts,
    plan,
    register,
    wait_until_final,
    write_history,
)

from tms.db import OperatorAction, TaskRepo, TaskState
from tms.execute.fencing import redact_fence_keys
from tms.hudi.timeline.instant import State
from worker.claim import ClaimLimits, claim_next, requeue_expired_leases
from worker.fence import fence_url
from worker.supervisor import JobSettings, JobSupervisor, Outcome

LIMITS = ClaimLimits(lease_seconds=30, driver_memory_mb=512, driver_cores=1, max_executors_per_table=4)
MAX_DELTA_COMMITS = {"hoodie.compact.inline.max.delta.commits": 1}


def _expire_lease(db, task_id: int) -> None:
    """What a worker that hangs (or dies) leaves: a lease past its expiry."""
    with db.transaction() as session:
        session.execute(text("UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE id = :id"),
                        {"id": task_id})


def _compaction(tmp_path, service, db, name="t") -> tuple[ModelledTable, int]:
    t = ModelledTable(tmp_path / name, "MERGE_ON_READ", 8)
    write_history(t)
    [task_id] = plan(db, register(service, t.path, **MAX_DELTA_COMMITS), "compaction")
    return t, task_id


def test_the_fence_answers_yes_to_the_live_lease_only(tmp_path, service, db, local_queue):
    local_queue()
    _, task_id = _compaction(tmp_path, service, db)
    first = claim_next(db, "w1", LIMITS)
    url = fence_url(service.url, task_id, first.fencing_token, first.fence_key)

    ok = httpx.get(url)
    assert ok.status_code == 200 and ok.json() == {"task_id": task_id, "fencing_token": first.fencing_token,
                                                   "holds": True}
    wrong_key = httpx.get(fence_url(service.url, task_id, first.fencing_token, "guessed"))
    assert wrong_key.status_code == 403 and "key" in wrong_key.json()["detail"]
    assert httpx.get(url.replace("key=", "nokey=")).status_code == 422

    _expire_lease(db, task_id)
    expired = httpx.get(url)
    assert expired.status_code == 409 and "expired" in expired.json()["detail"]
    assert requeue_expired_leases(db) == [task_id]
    second = claim_next(db, "w2", LIMITS)
    assert second.fencing_token == first.fencing_token + 1
    taken_over = httpx.get(url)
    assert taken_over.status_code == 409 and "taken over" in taken_over.json()["detail"]
    assert httpx.get(fence_url(service.url, task_id, second.fencing_token, second.fence_key)).status_code == 200
    assert httpx.get(fence_url(service.url, task_id, second.fencing_token, first.fence_key)).status_code == 403

    with db.transaction() as session:
        TaskRepo(session).apply(task_id, OperatorAction.CANCEL)
    cancelled = httpx.get(fence_url(service.url, task_id, second.fencing_token, second.fence_key))
    assert cancelled.status_code == 409 and "CANCELLED" in cancelled.json()["detail"]


def test_a_worker_whose_lease_was_taken_over_cannot_start_the_instant(tmp_path, service, db, local_queue,
                                                                       start_worker):
    local_queue()
    t, task_id = _compaction(tmp_path, service, db)
    stale = claim_next(db, "hung-worker", LIMITS)  # claims, then hangs past its lease
    _expire_lease(db, task_id)
    requeue_expired_leases(db)

    settings = JobSettings(database=db, service_url=service.url, runner="python", py_files=None,
                           log_dir=tmp_path / "jobs", lease_seconds=30, timeout_seconds=60)
    assert JobSupervisor(settings, stale).run() is Outcome.LEASE_LOST  # the hung worker wakes up
    assert set(t.table().timeline.states_of(stale.instant)) == {State.REQUESTED}, "the fence stopped it"
    [lost] = attempts(db, task_id)
    assert lost.outcome == "LOST" and "lease lost" in lost.log_tail

    start_worker()
    assert wait_until_final(db, task_id).state == TaskState.SUCCEEDED
    assert [a.outcome for a in attempts(db, task_id)] == ["LOST", "SUCCEEDED"]
    t.check()


def test_two_workers_never_run_one_task_twice(tmp_path, service, db, local_queue, start_worker):
    local_queue(capacity=8)
    tables, task_ids = [], []
    for n in range(4):
        t, task_id = _compaction(tmp_path, service, db, f"t{n}")
        tables.append(t)
        task_ids.append(task_id)

    workers = [start_worker(f"worker-{n}", worker_slots=2) for n in range(2)]
    done = [wait_until_final(db, task_id, timeout=120) for task_id in task_ids]

    assert all(d.state == TaskState.SUCCEEDED for d in done), [d.error for d in done]
    runs = [attempts(db, task_id) for task_id in task_ids]
    assert all(len(r) == 1 for r in runs), "one attempt per task"
    assert {r[0].worker for r in runs} <= {w.id for w in workers}
    for t, d in zip(tables, done, strict=True):
        table = t.table()
        written = table.timeline.commit_metadata(table.timeline.get(d.instant)).write_stats()
        on_disk = [p for p in t.path.rglob(f"*_{d.instant}.parquet")]
        assert len(on_disk) == len(written) == d.plan_stats["operations"], "each file group compacted once"
        t.check()


def test_the_fence_key_is_in_no_text_a_viewer_reads(tmp_path, service, db, local_queue, monkeypatch):
    # A job that cannot reach its fence (the service's URL is wrong) fails, once it has asked for its patience,
    # saying where it looked: not with which key. Its task's error, its attempt's error and log tail name the URL
    # without the key.
    monkeypatch.setenv("TMS_FENCE_PATIENCE_SECONDS", "1")  # the job's, from the worker's environment
    local_queue()
    _, task_id = _compaction(tmp_path, service, db)
    claimed = claim_next(db, "w1", LIMITS)
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{sock.getsockname()[1]}"
    settings = JobSettings(database=db, service_url=nowhere, runner="python", py_files=None,
                           log_dir=tmp_path / "jobs", lease_seconds=30, timeout_seconds=60)
    assert JobSupervisor(settings, claimed).run() is Outcome.FAILED
    [attempt] = attempts(db, task_id)
    with db.transaction() as session:
        task = TaskRepo(session).get(task_id)
    texts = [task.error or "", attempt.error or "", attempt.log_tail or ""]
    assert f"cannot confirm the lease at {nowhere}/api/v1/tasks/{task_id}/fence: " in attempt.log_tail
    assert all(claimed.fence_key not in text for text in texts), texts
    # what the worker records is redacted however the job showed the key (its command line, a bare key)
    shown = f"argv: --fence-url {fence_url(nowhere, task_id, 1, 'k3y-Secret_1')} then k3y-Secret_1"
    assert redact_fence_keys(shown, "k3y-Secret_1") == \
        f"argv: --fence-url {nowhere}/api/v1/tasks/{task_id}/fence?token=1&key=<redacted> then <redacted>"
