"""The issue's scenarios, run for real (python jobs, a worker, a planner and a leading manager in threads):
a missing log file, a worker stopped mid-job (as `tms up`'s Ctrl-C stops it), a table folder removed and
put back, a cancel racing the job's completion and an instant removed from the timeline."""
from __future__ import annotations

import shutil
import subprocess
import sys

import httpx
from manager_support import FAST_RETRY, REPO
from worker_support import ModelledTable, attempts, plan, rec, register, task, wait_for, write_history

from tms.db import AlertRepo, TaskState
from tms.hudi.timeline.instant import State

S = TaskState


def _state(db, task_id: int) -> S:
    return S(task(db, task_id).state)


def _alerts(db, **filters):
    with db.transaction() as session:
        return AlertRepo(session).find(**filters)[0]


def _mor(tmp_path, service, name: str = "t") -> tuple[ModelledTable, int]:
    t = ModelledTable(tmp_path / name, "MERGE_ON_READ", 6)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    write_history(t)
    return t, table_id


def test_a_missing_log_file_fails_for_good_alerts_and_a_rerun_compacts_the_file_groups_again(
        tmp_path, service, db, local_queue, start_worker, start_manager):
    local_queue()
    t, table_id = _mor(tmp_path, service)
    [task_id] = plan(db, table_id, "compaction")
    log_file = sorted(p for p in t.path.rglob("*") if ".log." in p.name)[0]
    kept = tmp_path / "kept-log"
    shutil.move(log_file, kept)
    start_worker(**FAST_RETRY)
    start_manager()
    wait_for(lambda: _alerts(db, kind="task_failed", state="firing"), timeout=60, what="the task_failed alert")
    failed = task(db, task_id)
    assert failed.state == S.FAILED and failed.failure_kind == "missing_files" and failed.retryable is False
    assert failed.next_attempt_at is None and "not retried" in failed.retry_reason
    assert len(attempts(db, task_id)) == 1  # not retried: missing files do not come back by themselves

    shutil.move(kept, log_file)  # an operator restores the file and reruns the task
    assert httpx.post(f"{service.url}/api/v1/tasks/{task_id}:rerun", headers=service.admin).status_code == 200
    wait_for(lambda: _state(db, task_id) == S.SUCCEEDED, timeout=60, what="the rerun")
    wait_for(lambda: not _alerts(db, kind="task_failed", state="firing"), timeout=30, what="the alert's resolution")
    assert State.COMPLETED in t.table().timeline.states_of(failed.instant)
    t.check()
    # The file groups are free again: the next writes make the next compaction of them due.
    t.write([rec(i, 100) for i in range(0, 30, 2)])
    assert plan(db, table_id, "compaction"), "a new compaction of the file groups"


def test_jobs_killed_by_a_shutdown_complete_after_the_restart_without_an_operator(
        tmp_path, service, db, local_queue, start_worker, start_manager, job_faults):
    local_queue()
    t, table_id = _mor(tmp_path, service)
    [task_id] = plan(db, table_id, "compaction")
    job_faults("sleep30")  # the first job lingers until the shutdown kills it
    first = start_worker(**FAST_RETRY)
    wait_for(lambda: _state(db, task_id) == S.RUNNING and first.running, timeout=30, what="the job to run")
    first.stop()  # what SIGINT (tms up's Ctrl-C) does: the worker kills its jobs and stops
    wait_for(lambda: _state(db, task_id) == S.FAILED, timeout=30, what="the killed attempt")
    killed = task(db, task_id)
    assert killed.failure_kind == "stopped" and killed.retryable and killed.next_attempt_at is not None

    start_manager()  # tms up, started again: its manager and a new worker
    start_worker(**FAST_RETRY)
    wait_for(lambda: _state(db, task_id) == S.SUCCEEDED, timeout=60, what="the retried job")
    assert [a.outcome for a in attempts(db, task_id)] == ["FAILED", "SUCCEEDED"]
    assert _alerts(db, kind="task_failed") == []
    t.check()


def test_a_removed_table_folder_alerts_within_one_scan_and_resolves_when_it_is_back(
        tmp_path, service, db, start_planner, start_manager):
    t, table_id = _mor(tmp_path, service)
    start_planner(planner_scan_seconds=3600, planner_tick_seconds=3600)
    start_manager(planner_scan_seconds=1)  # the leader asks the planners for a scan every second
    moved = tmp_path / "moved-away"
    t.path.rename(moved)
    [alert] = wait_for(lambda: _alerts(db, kind="table_unreadable", state="firing"), timeout=30,
                       what="table_unreadable")
    assert alert.table_id == table_id and alert.subject == f"table:{table_id}" and str(t.path) in alert.message
    moved.rename(t.path)
    wait_for(lambda: not _alerts(db, kind="table_unreadable", state="firing"), timeout=30, what="the resolution")
    [resolved] = _alerts(db, kind="table_unreadable")
    assert resolved.id == alert.id and resolved.state == "resolved"


def test_a_cancel_racing_completion_ends_succeeded_and_a_removed_instant_cancelled(
        tmp_path, service, db, start_manager):
    t, table_id = _mor(tmp_path, service)
    [raced] = plan(db, table_id, "compaction")
    assert httpx.post(f"{service.url}/api/v1/tasks/{raced}:cancel", headers=service.admin).status_code == 200
    instant = task(db, raced).instant
    # The job completes the instant although the task was cancelled meanwhile (it passed its fence first).
    subprocess.run([sys.executable, "-m", "jobs.python_job", "--table", str(t.path), "--instant", instant],
                   cwd=REPO, check=True, capture_output=True)
    t.write([rec(i, 200) for i in range(0, 30, 3)])
    [removed] = plan(db, table_id, "compaction")
    gone = task(db, removed).instant
    for f in (t.path / ".hoodie").glob(f"{gone}.*"):
        f.unlink()  # someone deleted the plan from the timeline
    start_manager()
    wait_for(lambda: _state(db, raced) == S.SUCCEEDED, timeout=30, what="the raced task's reconciliation")
    wait_for(lambda: _state(db, removed) == S.CANCELLED, timeout=30, what="the removed instant's task")
    assert task(db, removed).error == f"its instant {gone} was removed from the timeline"
