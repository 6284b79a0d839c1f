"""A fault-injecting HTTP proxy on loopback, in front of a test's store endpoint (the moto server): it forwards
each request as it is, except those a test asked to fail, which it fails in one of the ways a real store or
network does:

- `slowdown`: 503 SlowDown (S3's throttling answer), the request not forwarded;
- `error500`: 500 InternalError, the request not forwarded;
- `timeout`: no answer at all for `hold` seconds, then the connection closed (the request not forwarded);
- `reset`: the connection reset (TCP RST) half way through the request's body: an upload cut off mid-way;
- `lost_answer`: the request forwarded and done by the store, its answer lost (the connection reset).

`FaultProxy.start(upstream)` runs it in a thread of the test's process; `fail(kind, method, path_contains,
times)` arms a fault for the next `times` matching requests; `seen` records every request and what was done."""
from __future__ import annotations

import http.client
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULT_KINDS = ("slowdown", "error500", "timeout", "reset", "lost_answer")
_ERROR_BODIES = {
    "slowdown": (503, b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
                      b"<Message>Please reduce your request rate.</Message></Error>"),
    "error500": (500, b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>InternalError</Code>"
                      b"<Message>We encountered an internal error. Please try again.</Message></Error>"),
}


@dataclass
class _Fault:
    kind: str
    method: str
    path_contains: str
    times: int
    every: int = 1          # of the matching requests, every n-th fails (1: each, until `times` are used)
    matched: int = 0


@dataclass
class FaultProxy:
    upstream: str
    server: ThreadingHTTPServer
    hold: float = 3.0
    faults: list[_Fault] = field(default_factory=list)
    seen: list[tuple[str, str, str]] = field(default_factory=list)   # (method, path, "forwarded <status>" | kind)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @classmethod
    def start(cls, upstream: str) -> FaultProxy:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        proxy = cls(upstream, server)
        server.proxy = proxy  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, name="fault-proxy", daemon=True).start()
        return proxy

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail(self, kind: str, *, method: str = "", path_contains: str = "", times: int = 1, every: int = 1) -> None:
        assert kind in FAULT_KINDS, kind
        with self.lock:
            self.faults.append(_Fault(kind, method, path_contains, times, every))

    def clear(self) -> None:
        with self.lock:
            self.faults.clear()

    def injected(self, kind: str) -> int:
        return sum(1 for _, _, what in self.seen if what == kind)

    def _fault_for(self, method: str, path: str) -> str | None:
        with self.lock:
            for f in self.faults:
                if f.times > 0 and (not f.method or f.method == method) and f.path_contains in path:
                    f.matched += 1
                    if f.matched % f.every == 0:
                        f.times -= 1
                        return f.kind
            return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _handle(self) -> None:
        proxy: FaultProxy = self.server.proxy  # type: ignore[attr-defined]
        fault = proxy._fault_for(self.command, self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if fault == "reset":
            self.rfile.read(length // 2)
            proxy.seen.append((self.command, self.path, fault))
            self._reset()  # the client sees its upload cut off
            return
        body = self._body(length)
        if fault == "timeout":
            proxy.seen.append((self.command, self.path, fault))
            time.sleep(proxy.hold)
            self.close_connection = True
            return
        if fault in _ERROR_BODIES:
            proxy.seen.append((self.command, self.path, fault))
            status, payload = _ERROR_BODIES[fault]
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        target = urlsplit(proxy.upstream)
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
            if "Transfer-Encoding" in self.headers:
                headers["Content-Length"] = str(len(body))
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            response = upstream.getresponse()
            payload = response.read()
            if fault == "lost_answer":
                proxy.seen.append((self.command, self.path, fault))
                self._reset()
                return
            proxy.seen.append((self.command, self.path, f"forwarded {response.status}"))
            self.send_response_only(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(name, value)
            # a HEAD's Content-Length is the object's size, its body empty
            self.send_header("Content-Length", response.getheader("Content-Length", "0") if self.command == "HEAD"
                             else str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
        finally:
            upstream.close()

    def _reset(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()  # with no linger: a TCP RST
        self.close_connection = True

    def _body(self, length: int) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(length) if length else b""

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle
