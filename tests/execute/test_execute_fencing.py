"""A job's fence check over HTTP: a refusal is a lost lease at once; a service that does not answer (slow, down,
a 5xx) is asked again within the fence's patience, and only then counts as a lost lease."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tms.execute.errors import FencingError
from tms.execute.fencing import http_fence

SLOW = "slow"  # an answer given only after the client's timeout


@pytest.fixture
def fence_service() -> Iterator[tuple[str, list[int | str], list[str]]]:
    """(url, the answers it gives in turn (a status or SLOW; 200 once they are used up), the paths asked)."""
    script: list[int | str] = []
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            asked.append(self.path)
            answer = script.pop(0) if script else 200
            if answer == SLOW:
                time.sleep(1.0)
                answer = 200
            body = b'{"detail": "the lease of task 7 expired"}' if answer == 409 else b"{}"
            self.send_response(int(answer))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/api/v1/tasks/7/fence?token=3&key=secret", script, asked
    server.shutdown()
    server.server_close()


def test_a_service_that_does_not_answer_is_asked_again(fence_service):
    url, script, asked = fence_service
    script += [SLOW, 503]
    pauses: list[float] = []
    http_fence(url, timeout=0.2, patience=60, sleep=pauses.append)()  # returns: the lease holds
    assert len(asked) == 3 and len(pauses) == 2


def test_a_refusal_is_a_lost_lease_at_once_and_names_no_key(fence_service):
    url, script, asked = fence_service
    script.append(409)
    with pytest.raises(FencingError) as lost:
        http_fence(url, timeout=5, patience=60, sleep=lambda _: None)()
    assert len(asked) == 1
    shown = url.partition("?")[0]
    assert str(lost.value) == f'lease lost: {shown} answered 409 {{"detail": "the lease of task 7 expired"}}'


def test_no_answer_for_the_whole_patience_is_a_lost_lease():
    pauses: list[float] = []  # nothing listens on port 1 of loopback

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)

    fence = http_fence("http://127.0.0.1:1/fence?key=secret", timeout=1, patience=0.5, sleep=sleep)
    with pytest.raises(FencingError, match=r"^cannot confirm the lease at http://127.0.0.1:1/fence: ConnectError "
                                           r"\(asked for 0.5 s\)$"):
        fence()
    assert pauses and all(p <= 0.5 for p in pauses)
