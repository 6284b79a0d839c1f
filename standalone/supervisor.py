"""The roles of `tms up` as child processes, kept running: a role that exits is started again after a
backoff (1 s, doubling up to 30 s); one that exits too often (MAX_EXITS times within EXIT_WINDOW_SECONDS)
makes the supervisor give up with the last lines of its log. Each role runs in a session of its own, so
stopping it stops what it started (a worker's Spark jobs), and dies with `tms up` if that is killed outright
(Linux)."""
from __future__ import annotations

import ctypes
import os
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
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _stop_with_the_parent() -> None:
    """Run in the role's process before it executes: SIGTERM when `tms up` dies, however it dies."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        with open(path, errors="replace") as log:
            return [line.rstrip("\n") for line in deque(log, maxlen=lines)]
    except OSError:
        return []


class RoleFailed(TMSError):
    """A role that kept exiting: `tail` holds the last lines of its log."""

    def __init__(self, role: str, exits: int, status: int, log: Path):
        super().__init__(f"the {role} role exited {exits} times in a row (last status {status}): see the last "
                         f"lines of its log above, or all of it in {log}")
        self.role, self.log, self.tail = role, log, log_tail(log)


class RoleProcess:
    """One role: `python -m tms.cli <role>`, its output appended to `<log_dir>/<role>.log`."""

    def __init__(self, role: str, env: dict[str, str], log_dir: Path):
        self.role, self.env, self.log = role, env, log_dir / f"{role}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.exits: deque[float] = deque()  # when it exited, within the window
        self.restart_at: float | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
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
            role.start()

    def pids(self) -> list[int]:
        return [r.pid for r in self.roles if r.pid is not None]

    def check(self) -> None:
        """Restart the roles whose backoff has passed; schedule those that just exited. RoleFailed when a
        role exited MAX_EXITS times within EXIT_WINDOW_SECONDS."""
        now = self.clock()
        for role in self.roles:
            if role.restart_at is not None:
                if now >= role.restart_at:
                    role.start()
                continue
            status = role.exit_status()
            if status is None:
                continue
            role.exits.append(now)
            while role.exits and now - role.exits[0] > EXIT_WINDOW_SECONDS:
                role.exits.popleft()
            if len(role.exits) >= MAX_EXITS:
                raise RoleFailed(role.role, len(role.exits), status, role.log)
            backoff = min(FIRST_BACKOFF_SECONDS * 2 ** (len(role.exits) - 1), MAX_BACKOFF_SECONDS)
            role.restart_at = now + backoff
            last = log_tail(role.log, 1)
            self.echo(f"the {role.role} role exited with status {status}; restarting it in {backoff:.0f} s"
                      + (f" (its log ends: {last[0]})" if last else ""))

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
