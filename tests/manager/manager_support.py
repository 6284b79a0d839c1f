"""Settings and helpers the manager tests share."""
from __future__ import annotations

# Small intervals: a lease of 2 s renewed every 0.5 s, the leader's jobs several times a second.
FAST_MANAGER = {"manager_lease_seconds": 2, "manager_heartbeat_seconds": 0.5, "manager_restore_seconds": 1,
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


