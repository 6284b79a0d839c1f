"""Running `tms up` as a user does, in tests: a process with a fresh data directory (the embedded
PostgreSQL unless a database URL is given), its own runtime folder for instance records, and the processes
it leaves behind, found in /proc."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from support import REPO


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(runtime_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    return {**env, "TMS_RUNTIME_DIR": str(runtime_dir), **extra}


class UpProcess:
    """`tms up` in the background; its output collected line by line."""

    def __init__(self, data_dir: Path, env: dict[str, str], *args: str, port: int | None = None):
        self.data_dir, self.port = data_dir, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tms", "up", "--data-dir", str(data_dir), "--port", str(self.port), *args],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, text: str, timeout: float = 240) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((line for line in self.lines if text in line), None)
            if found is not None:
                return found
            if self.process.poll() is not None and not self._reader.is_alive():
                raise AssertionError(f"tms up exited with {self.process.returncode}:\n{self.output}")
            time.sleep(0.2)
        raise AssertionError(f"no {text!r} within {timeout} s:\n{self.output}")

    def wait(self, timeout: float = 120) -> int:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _proc_entries() -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":  # a zombie: exited, waiting to be reaped
            continue
        found.append((int(entry.name), int(fields[1]), cmdline))
    return found


def descendants(pid: int) -> set[int]:
    entries = _proc_entries()
    found, frontier = set(), {pid}
    while frontier:
        children = {p for p, parent, _ in entries if parent in frontier} - found
        found |= children
        frontier = children
    return found


def processes_naming(text: str) -> list[tuple[int, str]]:
    """Live processes whose command line names `text` (e.g. the embedded PostgreSQL of a data directory)."""
    return [(pid, cmd) for pid, _, cmd in _proc_entries() if text in cmd and pid != os.getpid()]


def alive(pids: set[int]) -> set[int]:
    live = {pid for pid, _, _ in _proc_entries()}
    return pids & live
