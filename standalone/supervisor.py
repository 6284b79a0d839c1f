"""The roles of `tms up` as child processes, kept running: a role that exits is started again after a
backoff (1 s, doubling up to 30 s); one that exits too often (MAX_EXITS times within EXIT_WINDOW_SECONDS)
makes the supervisor give up with the last lines of its log. A role that exits on its first start (within
START_SECONDS) makes it give up at once, with the error line of its log: a restart would fail the same way
(one killed by a signal is restarted). Each role runs in a session of its own, so stopping it stops what it
started (a worker's Spark jobs), and dies with `tms up` if that is killed outright (Linux)."""
from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from tms.errors import TMSError

MAX_EXITS = 4
EXIT_WINDOW_SECONDS = 300.0
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0
TAIL_LINES = 20
START_SECONDS = 60.0  # loading the CLI alone takes 5-20 s on a busy machine
# A line of a role's log that says what went wrong (uvicorn's "ERROR: ... address already in use", the CLI's
# "error: ...", a Python exception's last line).
_ERROR_LINE = re.compile(r"error|exception|refused|denied|in use|not found|no such", re.IGNORECASE)
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _stop_with_the_parent() -> None:
    """Run in the role's process before it executes: SIGTERM when `tms up` dies, however it dies."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def log_tail(path: Path, lines: int = TAIL_LINES, since: int = 0) -> list[str]:
    """The last `lines` lines of the log, of those written from byte offset `since` on."""
    try:
        with open(path, "rb") as log:
            log.seek(since)
            return [line.decode(errors="replace").rstrip("\n") for line in deque(log, maxlen=lines)]
    except OSError:
        return []


def error_line(lines: list[str]) -> str | None:
    """The last line that says what went wrong, else the last line (None for no line)."""
    return next((line.strip() for line in reversed(lines) if _ERROR_LINE.search(line)),
                lines[-1].strip() if lines else None)


class RoleFailed(TMSError):
    """A role that kept exiting: `tail` holds the last lines of its log."""

    def __init__(self, role: str, exits: int, status: int, log: Path):
        super().__init__(f"the {role} role exited {exits} times in a row (last status {status}): see the last "
                         f"lines of its log above, or all of it in {log}")
        self.role, self.log, self.tail = role, log, log_tail(log)


class RoleFailedOnStart(RoleFailed):
    """A role that exited on its first start: `tail` holds what it logged then."""

    def __init__(self, role: str, status: int, log: Path, since: int):
        tail = log_tail(log, since=since)
        TMSError.__init__(self, f"the {role} role exited on start (status {status}): "
                                f"{error_line(tail) or 'it logged nothing'} (its log: {log})")
        self.role, self.log, self.tail = role, log, tail


class RoleProcess:
    """One role: `python -m tms.cli <role>`, its output appended to `<log_dir>/<role>.log`."""

    def __init__(self, role: str, env: dict[str, str], log_dir: Path):
        self.role, self.env, self.log = role, env, log_dir / f"{role}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.exits: deque[float] = deque()  # when it exited, within the window
        self.restart_at: float | None = None
        self.first_started_at: float | None = None
        self.log_offset = 0  # where the log of its latest start begins

    def start(self, now: float) -> None:
        if self.first_started_at is None:
            self.first_started_at = now
        with open(self.log, "ab") as log:
            self.log_offset = log.tell()
            self.process = subprocess.Popen([sys.executable, "-m", "tms.cli", self.role], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_stop_with_the_parent)
        self.restart_at = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exit_status(self) -> int | None:
        """The status it exited with, None while it runs (or before it started)."""
        return self.process.poll() if self.process else None

    def signal_group(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float) -> bool:
        """Whether it has exited within `timeout` seconds."""
        if self.process is None:
            return True
        try:
            self.process.wait(timeout=max(timeout, 0.01))
        except subprocess.TimeoutExpired:
            return False
        return True


class Supervisor:
    """Starts the roles and keeps them running; `check()` (called often) restarts those that exited."""

    def __init__(self, roles: Iterable[str], env: dict[str, str], log_dir: Path, echo: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic):
        self.roles = [RoleProcess(role, env, log_dir) for role in roles]
        self.echo, self.clock = echo, clock

    def start(self) -> None:
        for role in self.roles:
            role.start(self.clock())

    def pids(self) -> list[int]:
        return [r.pid for r in self.roles if r.pid is not None]

    def check(self) -> None:
        """Restart the roles whose backoff has passed; schedule those that just exited. RoleFailed when a
        role exited MAX_EXITS times within EXIT_WINDOW_SECONDS."""
        now = self.clock()
        for role in self.roles:
            if role.restart_at is not None:
                if now >= role.restart_at:
                    role.start(now)
                continue
            status = role.exit_status()
            if status is None:
                continue
            # Killed by a signal (negative status) is not a failure to start: restarted as any other exit.
            if (status >= 0 and not role.exits and role.first_started_at is not None
                    and now - role.first_started_at < START_SECONDS):
                raise RoleFailedOnStart(role.role, status, role.log, role.log_offset)
            role.exits.append(now)
            while role.exits and now - role.exits[0] > EXIT_WINDOW_SECONDS:
                role.exits.popleft()
            if len(role.exits) >= MAX_EXITS:
                raise RoleFailed(role.role, len(role.exits), status, role.log)
            backoff = min(FIRST_BACKOFF_SECONDS * 2 ** (len(role.exits) - 1), MAX_BACKOFF_SECONDS)
            role.restart_at = now + backoff
            last = error_line(log_tail(role.log, since=role.log_offset))
            self.echo(f"the {role.role} role exited with status {status}; restarting it in {backoff:.0f} s"
                      + (f" (its log says: {last})" if last else ""))

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to every role (and what it started), SIGKILL to those still running after `timeout`."""
        for role in self.roles:
            role.restart_at = None
            role.signal_group(signal.SIGTERM)
        deadline = self.clock() + timeout
        for role in self.roles:
            if not role.wait(deadline - self.clock()):
                role.signal_group(signal.SIGKILL)
                role.wait(5)
