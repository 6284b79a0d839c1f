"""A job's operating-system process: spark-submit (or the plain Python job) started in a session of its own,
so that killing its process group also stops what it started (the JVM, the Python driver and its workers).
Its output goes to a log file, which is scanned for the Spark application id and whose tail is recorded."""
from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

# What spark-submit's output names the application by: local-<millis> (local masters), app-<date>-<n>
# (standalone), application_<millis>_<n> (YARN), spark-<32 hex> (Kubernetes).
APP_ID = re.compile(r"\b(local-\d{13}|app-\d{14}-\d{4,}|application_\d{13}_\d{4,}|spark-[0-9a-f]{32})\b")
TAIL_CHARS = 8000
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_the_worker() -> None:
    """Run in the job's process before it executes: a worker killed outright (SIGKILL, OOM) takes its jobs
    with it, so that no job goes on writing files unsupervised (Linux; elsewhere the lease fence remains)."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def find_app_id(text: str) -> str | None:
    match = APP_ID.search(text)
    return match.group(1) if match else None


def last_error_line(text: str) -> str | None:
    """The job's own reason for failing (jobs/run.py prints `error: ...`), else a Python exception line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for prefix in ("error:", "Traceback"):
        found = [i for i, line in enumerate(lines) if line.startswith(prefix)]
        if found:
            return lines[found[-1]] if prefix == "error:" else lines[-1]
    return None


class JobLog:
    """The log file of a job: its new complete lines (scanned for the application id) and its tail."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self._read_to = 0

    def new_output(self) -> str:
        """The complete lines written since the last call."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._read_to)
                data = log.read()
        except FileNotFoundError:
            return ""
        complete = data[:data.rfind(b"\n") + 1]
        self._read_to += len(complete)
        return complete.decode(errors="replace")

    def tail(self, chars: int = TAIL_CHARS) -> str:
        try:
            with open(self.log_path, "rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(0, size - chars))
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""


class JobProcess(JobLog):
    def __init__(self, command: list[str], env: dict[str, str], log_path: Path):
        super().__init__(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_die_with_the_worker)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None if the job still runs after `timeout` seconds."""
        try:
            return self.process.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the job's process."""
        self.stop_group()
        self.process.wait()

    def stop_group(self) -> None:
        """Kill what is left of the group (after a normal exit: stray Python workers, if any)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
