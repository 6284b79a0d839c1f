"""Retry with backoff, run for real: python jobs made to fail (job_faults), a worker and a leading manager
in threads, alerts delivered to a real HTTP receiver."""
from __future__ import annotations

import time

import httpx
from manager_support import FAST_RETRY
from worker_support import ModelledTable, attempts, plan, register, task, wait_for, write_history

from tms.db import AlertRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State
from tms.webhooks.payload import verify

SECRET = "webhook-secret-for-tests"


def _compaction(tmp_path, service, db) -> tuple[ModelledTable, int, int]:
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    return t, table_id, task_id


def _state(db, task_id: int) -> TaskState:
    return TaskState(task(db, task_id).state)


def _webhook(service, url: str, **fields) -> int:
    response = httpx.post(f"{service.url}/api/v1/webhooks", headers=service.admin, timeout=10,
                          json={"url": url, "secret": SECRET, **fields})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_a_job_failing_twice_then_succeeding_succeeds_on_its_third_attempt_after_the_backoff(
        tmp_path, service, db, local_queue, start_worker, start_manager, job_faults):
    local_queue()
    t, _, task_id = _compaction(tmp_path, service, db)
    job_faults("crash", "crash")
    start_worker(**FAST_RETRY)
    start_manager()
    wait_for(lambda: _state(db, task_id) == TaskState.SUCCEEDED, timeout=180, what="the third attempt")
    # An attempt whose worker was starved past its lease (a loaded machine) is LOST and run again: not one of
    # the job's own failures, and not counted against its retries.
    tried = [a for a in attempts(db, task_id) if a.outcome != "LOST"]
    assert [a.outcome for a in tried] == ["FAILED", "FAILED", "SUCCEEDED"]
    assert all("injected crash" in a.error for a in tried[:2])
    # The waits follow the backoff: 1 s, then 2 s (+-20% jitter). Load only makes a retry later, so only
    # the lower bounds are sure (no retry before its time).
    waits = [(tried[i + 1].started_at - tried[i].finished_at).total_seconds() for i in range(2)]
    assert waits[0] >= 0.8 and waits[1] >= 1.6, waits
    assert State.COMPLETED in HudiTable.load(str(t.path)).timeline.states_of(task(db, task_id).instant)
    with db.transaction() as session:
        assert AlertRepo(session).find(kind="task_failed")[1] == 0


def test_a_job_that_always_fails_ends_failed_with_one_task_failed_alert_delivered_signed(
        tmp_path, service, db, local_queue, start_worker, start_manager, job_faults, receiver):
    local_queue()
    _, table_id, task_id = _compaction(tmp_path, service, db)
    hook = _webhook(service, receiver.url)
    job_faults(*["crash"] * 10)
    start_worker(**FAST_RETRY)
    start_manager()
    wait_for(lambda: receiver.accepted, timeout=90, what="the alert's delivery")
    time.sleep(2)  # a few more rounds of the leader: nothing is retried or sent again
    failed = task(db, task_id)
    assert failed.state == TaskState.FAILED and failed.attempt == 3 and failed.next_attempt_at is None
    assert "retries exhausted after 3 attempt(s)" in failed.retry_reason
    assert [a.outcome for a in attempts(db, task_id)] == ["FAILED"] * 3
    [got] = receiver.accepted
    assert verify(SECRET, got.signature, got.body)
    assert not verify("another-secret", got.signature, got.body)
    doc = got.document
    assert (doc["type"], doc["severity"], doc["state"], doc["subject"], doc["table_id"]) == (
        "task_failed", "critical", "firing", f"task:{task_id}", table_id)
    assert "injected crash" in doc["message"] or "retries exhausted" in doc["message"]
    deliveries = httpx.get(f"{service.url}/api/v1/webhooks/{hook}/deliveries", headers=service.admin).json()
    assert [(d["id"], d["state"], d["attempts"]) for d in deliveries["items"]] == [(int(got.delivery), "delivered", 1)]
    with db.transaction() as session:
        alerts, total = AlertRepo(session).find(kind="task_failed")
    assert total == 1 and alerts[0].state == "firing" and not alerts[0].muted

    # An operator's rerun starts a new series; its success resolves the alert, and the resolution is sent.
    job_faults()
    rerun = httpx.post(f"{service.url}/api/v1/tasks/{task_id}:rerun", headers=service.admin)
    assert rerun.status_code == 200, rerun.text
    wait_for(lambda: _state(db, task_id) == TaskState.SUCCEEDED, timeout=60, what="the rerun")
    wait_for(lambda: len(receiver.accepted) == 2, timeout=30, what="the resolution's delivery")
    resolved = receiver.accepted[1].document
    assert (resolved["type"], resolved["state"], resolved["subject"]) == ("task_failed", "resolved", f"task:{task_id}")


def test_a_muted_tables_alert_is_recorded_muted_and_not_delivered(
        tmp_path, service, db, local_queue, start_worker, start_manager, job_faults, receiver):
    local_queue()
    _, table_id, task_id = _compaction(tmp_path, service, db)
    _webhook(service, receiver.url)
    mute = httpx.post(f"{service.url}/api/v1/mutes", headers=service.admin, json={"table_id": table_id})
    assert mute.status_code == 201, mute.text
    job_faults("crash")
    start_worker(**{**FAST_RETRY, "retry_max_attempts": 1})
    start_manager()

    def alert():
        with db.transaction() as session:
            found, _ = AlertRepo(session).find(kind="task_failed")
            return found
    [recorded] = wait_for(alert, timeout=60, what="the task_failed alert")
    assert recorded.muted and recorded.task_id == task_id
    time.sleep(2)  # several delivery polls
    assert receiver.accepted == []


def test_deliveries_reach_a_receiver_down_for_its_first_attempts_across_a_manager_restart(
        tmp_path, service, db, start_manager, receiver):
    receiver.refuse = 4
    hook = _webhook(service, receiver.url, min_severity="warning")
    with db.transaction() as session:  # three alerts, as the planner raises them
        alerts = AlertRepo(session)
        for n in range(3):
            alerts.raise_alert(kind="planning_failed", severity="warning", message=f"step {n} failed",
                               fingerprint=f"planning_failed:test:{n}", subject=f"table:{n}")
    first = start_manager(webhook_backoff_seconds=0.5)
    wait_for(lambda: receiver.refused >= 2, timeout=30, what="failed attempts")
    start_manager.stop(first)
    assert len(receiver.accepted) == 0
    start_manager(webhook_backoff_seconds=0.5)
    wait_for(lambda: len(receiver.accepted) == 3, timeout=60, what="every delivery")
    time.sleep(1)
    assert sorted(r.document["message"] for r in receiver.accepted) == ["step 0 failed", "step 1 failed",
                                                                         "step 2 failed"]
    assert len({r.delivery for r in receiver.accepted}) == 3
    deliveries = httpx.get(f"{service.url}/api/v1/webhooks/{hook}/deliveries", headers=service.admin).json()["items"]
    assert {d["state"] for d in deliveries} == {"delivered"}
    assert sum(d["attempts"] for d in deliveries) == 3 + 4  # every refusal was an attempt, recorded
    assert all(len(d["attempt_log"]) == d["attempts"] for d in deliveries)
