"""Two planner processes (`tms planner`), one table, a burst of events: each due action is planned once on
the timeline and every plan has exactly one task."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from planner_db_support import TrackedTable, pending_plans
from planning_support import rec

from tms.db import EventRepo, InstanceRepo

REPO = Path(__file__).resolve().parents[2]
POLICY = {"hoodie.compact.inline.max.delta.commits": 3,
          # a writer silent for 2 s is gone: long enough for the burst's writes to complete on a busy machine,
          # short enough for the failed write below to be due for a rollback before the burst
          "hoodie.client.heartbeat.interval_in_ms": 1000, "hoodie.client.heartbeat.tolerable.misses": 1}
GONE_AFTER = 2.5  # seconds: the failed write's heartbeat has expired


def _start_planner(db, log: Path) -> subprocess.Popen:
    env = {**os.environ, "TMS_DATABASE_URL": db.url, "TMS_MIGRATE_ON_START": "false", "PYTHONPATH": str(REPO),
           "TMS_PLANNER_POLL_SECONDS": "0.02", "TMS_PLANNER_TICK_SECONDS": "0.3", "TMS_PLANNER_SCAN_SECONDS": "3600",
           "TMS_HEARTBEAT_SECONDS": "0.2", "TMS_PLANNER_THREADS": "4", "TMS_LOG_LEVEL": "DEBUG"}
    return subprocess.Popen([sys.executable, "-m", "tms.cli", "planner"], cwd=REPO, env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(condition, timeout: float, what: str, procs) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for p in procs:
            assert p.poll() is None, f"a planner exited with {p.returncode} while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_two_planner_processes_plan_each_due_action_once(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=POLICY)
    t.write([rec(i, 10) for i in range(9)], "insert")
    failed = t.write([rec(0, 15)], leave_inflight=True)  # its writer is gone
    failed_at = time.monotonic()
    procs = [_start_planner(db, tmp_path / f"planner-{n}.log") for n in (1, 2)]
    try:
        def planners_up():
            with db.transaction() as session:
                return sum("planner" in i.roles for i in InstanceRepo(session).list()) == 2
        _wait_for(planners_up, 60, "both planners", procs)
        time.sleep(max(0.0, GONE_AFTER - (time.monotonic() - failed_at)))

        for ts in range(20, 32):  # the burst: requested, inflight, completed of each delta commit
            instant = t.write([rec(i, ts) for i in range(9)], leave_inflight=True, report=False)
            t.report(instant, "requested")
            t.report(instant, "inflight")
            t.complete(instant)

        def settled():
            with db.transaction() as session:
                return not EventRepo(session).tables_with_unprocessed()
        _wait_for(settled, 60, "the events to be processed", procs)
        time.sleep(1.0)  # a periodic trigger or two more, which must plan nothing twice either
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)
    assert [p.returncode for p in procs] == [0, 0]
    for n in (1, 2):
        assert "event(s)" in (tmp_path / f"planner-{n}.log").read_text(), f"planner {n} handled no event"

    plans = pending_plans(t.table())
    assert sorted(action for _, action in plans) == ["compaction", "rollback"], plans
    tasks = t.tasks()
    assert sorted(task.instant for task in tasks) == sorted(instant for instant, _ in plans), \
        "one task per plan, no plan without a task"
    rollback = next(task for task in tasks if task.service == "rollback")
    assert rollback.target_instant == failed
