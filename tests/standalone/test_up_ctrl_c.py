"""Ctrl-C of `tms up` while a job runs: the worker kills the job and records a retryable failure; the next
`tms up` retries it (its manager's leader) and the job completes, with no operator."""
from __future__ import annotations

import re
import signal
import time

import pytest
from sqlalchemy import select
from up_support import UpProcess, clean_env

from tms.db import Database
from tms.db.models import Task, TaskAttempt
from tms.db.testing import scratch_database

# The first job started lingers (a sitecustomize on the jobs' PYTHONPATH), so Ctrl-C finds it running.
LINGER = '''
import os, sys, time
flag = os.environ.get("TMS_TEST_LINGER_ONCE")
if flag and any("jobs." in a or "python_job" in a for a in sys.orig_argv) and not os.path.exists(flag):
    open(flag, "w").close()
    time.sleep(600)
'''


def _first_compaction(database: Database) -> Task | None:
    with database.transaction() as session:
        return session.scalars(select(Task).where(Task.service == "compaction").order_by(Task.id)).first()


def _wait(what: str, condition, timeout: float = 400):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.5)
    return found


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.waiting
@pytest.mark.beside
def test_jobs_killed_by_ctrl_c_of_tms_up_complete_after_the_restart_without_an_operator(tmp_path, data_dir):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(LINGER)
    with scratch_database() as url:
        env = clean_env(tmp_path / "run", TMS_DATABASE_URL=url, TMS_WORKER_RUNNER="python",
                        TMS_RETRY_BACKOFF_SECONDS="1", TMS_TEST_LINGER_ONCE=str(tmp_path / "lingered"),
                        PYTHONPATH=str(site))
        database = Database(url)
        first = UpProcess(data_dir, env, "--interval", "0.5")
        try:
            _wait("a compaction job running", lambda: (tmp_path / "lingered").exists()
                  and (t := _first_compaction(database)) is not None and t.state == "RUNNING")
            first.process.send_signal(signal.SIGINT)  # Ctrl-C
            assert first.wait(timeout=120) == 0, first.output
        finally:
            first.kill()
        killed = _first_compaction(database)
        assert killed is not None and killed.state == "FAILED", (killed.state if killed else None)
        assert killed.failure_kind == "stopped" and killed.retryable and killed.next_attempt_at is not None

        second = UpProcess(data_dir, env, "--interval", "0.5")
        try:
            done = _wait("the killed job completed after the restart",
                         lambda: (t := _first_compaction(database)) is not None and t.state == "SUCCEEDED" and t)
            second.wait_for(f"task {done.id} (table trips): compaction {done.instant} SUCCEEDED", timeout=60)
            second.process.send_signal(signal.SIGINT)
            assert second.wait(timeout=120) == 0, second.output
        finally:
            second.kill()
        assert done.id == killed.id
        # The restart's console: one line summing up the past, then only changes (no replay of the FAILED state
        # the task had when it started), each naming the table.
        assert re.search(r"^\d+ task\(s\) before this start \(.+\); from now on", second.output, re.M), second.output
        assert f"task {killed.id} (table trips): compaction {killed.instant} FAILED" not in second.output
        with database.transaction() as session:
            outcomes = session.scalars(select(TaskAttempt.outcome).where(TaskAttempt.task_id == killed.id)
                                       .order_by(TaskAttempt.attempt)).all()
        assert list(outcomes) == ["FAILED", "SUCCEEDED"]
        database.dispose()
