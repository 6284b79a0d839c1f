"""A test server in a process of its own on a free loopback port (the moto S3 server, Azurite): the port, the
wait until it listens, the stop."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_listening(process: subprocess.Popen, port: int, what: str, log_path: Path, timeout: float) -> None:
    """Return once `process` accepts connections on `port`; fail (the process stopped) with its log if it exits
    or does not listen within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited: {log_path.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                stop(process)
                raise AssertionError(f"{what} did not start: {log_path.read_text()}") from None
            time.sleep(0.1)
