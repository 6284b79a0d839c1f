"""Settings and helpers the manager tests share."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from tms.db import Database

# Small intervals: a lease of 4 s renewed every second (roomy: CI machines are loaded), the leader's jobs
# several times a second.
FAST_MANAGER = {"manager_lease_seconds": 4, "manager_heartbeat_seconds": 1, "manager_reconcile_seconds": 1,
                "manager_retry_seconds": 0.2, "manager_monitor_seconds": 0.3, "webhook_poll_seconds": 0.2,
                "webhook_backoff_seconds": 0.3, "planner_tick_seconds": 3600, "planner_scan_seconds": 3600,
                "heartbeat_seconds": 3600}
FAST_RETRY = {"retry_backoff_seconds": 1.0, "retry_backoff_max_seconds": 10.0, "retry_max_attempts": 3}

FAULTS_SITECUSTOMIZE = '''
import os, sys, time
_path = os.environ.get("TMS_TEST_JOB_FAULTS")
if _path and any("jobs." in a or "python_job" in a for a in sys.orig_argv):
    with open(_path) as fh:
        plan = fh.read().split()
    if plan:
        first, rest = plan[0], plan[1:]
        with open(_path, "w") as fh:
            fh.write(" ".join(rest))
        if first == "crash":
            print("error: injected crash", file=sys.stderr, flush=True)
            os._exit(1)
        if first == "oom":
            print("java.lang.OutOfMemoryError: Java heap space", file=sys.stderr, flush=True)
            os._exit(1)
        if first.startswith("sleep"):
            time.sleep(float(first[5:]))
'''




REPO = Path(__file__).resolve().parents[2]
# Managers as processes: a lease of 4 s renewed every second.
LEASE_SECONDS, HEARTBEAT_SECONDS = 4.0, 1.0  # roomy: CI machines are loaded
PROCESS_ENV = {"TMS_MANAGER_LEASE_SECONDS": str(LEASE_SECONDS), "TMS_MANAGER_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
               "TMS_MANAGER_RECONCILE_SECONDS": "1", "TMS_MANAGER_MONITOR_SECONDS": "0.3",
               "TMS_WEBHOOK_POLL_SECONDS": "0.2", "TMS_PLANNER_TICK_SECONDS": "3600",
               "TMS_PLANNER_SCAN_SECONDS": "3600", "TMS_LOG_LEVEL": "INFO"}


class ManagerProcesses:
    """`tms manager` processes on one database, each logging to a file of its own."""

    def __init__(self, database: Database, log_dir: Path, **env: str):
        self.database = database
        self.log_dir = log_dir
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("TMS_")}, **PROCESS_ENV,
                    "TMS_DATABASE_URL": database.url, **env}
        self.procs: dict[int, subprocess.Popen] = {}

    def start(self) -> subprocess.Popen:
        log = open(self.log_dir / f"manager-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "tms.cli", "manager"], cwd=REPO, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT)
        self.procs[proc.pid] = proc
        return proc

    def log_of(self, pid: int) -> Path:
        return self.log_dir / f"manager-{list(self.procs).index(pid)}.log"

    def lease(self) -> tuple[str | None, int, bool, bool]:
        """(holder, epoch, live, has run its periodic work since it took the lease)."""
        with self.database.transaction() as session:
            row = session.execute(text(
                "SELECT holder, epoch, expires_at > now(), last_work_at >= acquired_at FROM leases "
                "WHERE name = 'manager'")).first()
        return (row[0], row[1], bool(row[2]), bool(row[3])) if row else (None, 0, False, False)

    def wait_for_leader(self, *, other_than: str | None = None, timeout: float = 120) -> tuple[str, int, int]:
        """The working leader (not `other_than`): (holder, epoch, pid)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            holder, epoch, live, worked = self.lease()
            if holder and live and worked and holder != other_than:
                return holder, epoch, int(holder.split(":")[1])
            time.sleep(0.02)
        raise AssertionError(f"no leader within {timeout} s: {self.lease()}")

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
