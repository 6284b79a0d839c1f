"""`tms up` with its port taken: it starts nothing and says, in one line and within seconds, what holds the
port (another TMS, recognised by its API, or another process) and how to choose another (`--port`)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from up_support import UpProcess, clean_env


class _LikeTms(BaseHTTPRequestHandler):
    """Answers as a TMS service does: its OpenAPI document titled TMS, ready."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/openapi.json":
            body = json.dumps({"openapi": "3.1.0", "info": {"title": "TMS", "version": "9.8.7"}}).encode()
        elif self.path == "/readyz":
            body = json.dumps({"status": "ok"}).encode()
        else:
            self.send_error(401)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _refused_at_once(tmp_path, data_dir, port: int) -> tuple[str, float]:
    started = time.monotonic()
    up = UpProcess(data_dir, clean_env(tmp_path / "run"), port=port)
    try:
        code = up.wait(timeout=30)
    finally:
        up.kill()
    took = time.monotonic() - started
    assert code == 1, up.output
    assert len(up.lines) == 1, up.output  # one line, nothing else
    assert not (data_dir / "postgres").exists() and not (data_dir / "logs").exists(), "nothing was started"
    return up.lines[0], took


def test_a_port_held_by_another_tms_is_named_at_once(tmp_path, data_dir):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LikeTms)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        line, took = _refused_at_once(tmp_path, data_dir, port)
    finally:
        server.shutdown()
        server.server_close()
    assert line.startswith(f"error: port {port} of 127.0.0.1 is in use by another TMS (version 9.8.7, "
                           f"pid {os.getpid()}: "), line
    assert f"start a second TMS with a data directory and port of its own, e.g. --data-dir {data_dir}-2 --port " \
        in line, line
    assert took < 10, f"{took:.1f} s"


def test_up_help_is_printed_while_its_port_is_taken():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for asked in (["up", "--port", str(port), "--help"], ["up", "-h", "--port", str(port)]):
            done = subprocess.run([sys.executable, "-m", "tms", *asked], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0 and "tms up [OPTIONS]" in done.stdout, done.stdout + done.stderr
            assert "error:" not in done.stdout + done.stderr and "is in use by" not in done.stdout + done.stderr


@pytest.mark.parametrize("answers", [False, True], ids=["silent-socket", "closing-socket"])
def test_a_port_held_by_another_process_is_named_at_once(tmp_path, data_dir, answers):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        stop = threading.Event()

        def close_every_connection():  # a server that is not HTTP: accepts and hangs up
            taken.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = taken.accept()
                    conn.close()
                except OSError:
                    pass

        closer = threading.Thread(target=close_every_connection, daemon=True)
        if answers:
            closer.start()
        try:
            line, took = _refused_at_once(tmp_path, data_dir, port)
        finally:
            stop.set()
            if answers:
                closer.join()
    assert line.startswith(f"error: port {port} of 127.0.0.1 is in use by another process (pid {os.getpid()}: "), \
        line
    assert "TMS" not in line.split(":", 1)[1].split("(")[0], line
    assert "choose another with --port, e.g. --port " in line, line
    assert took < 10, f"{took:.1f} s"
