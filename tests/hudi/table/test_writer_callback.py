"""The writer's Hudi commit callback: a table named by a relative path lives under the working directory, the
base path the callback reports is that absolute path, and a callback the service refuses is reported with the
service's own reason."""
from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pyarrow as pa

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64())])


class _Refusing(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        length = int(self.headers["Content-Length"])
        _Refusing.bodies.append(json.loads(self.rfile.read(length)))
        payload = json.dumps({"detail": "unknown table, or a wrong HUDI-CALLBACK-KEY"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_relative_base_path_is_sent_absolute_and_a_refusal_says_why(tmp_path, monkeypatch, caplog):
    server = HTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.chdir(tmp_path)
        HudiWriter.create_table("t", table_type="MERGE_ON_READ", version=8, key=["id"], ordering=["ts"],
                                partition=[], schema=SCHEMA, name="t")
        writer = HudiWriter(HudiTable.load("t"), callback_url=f"http://127.0.0.1:{server.server_port}/cb",
                            callback_key="wrong")
        with caplog.at_level(logging.WARNING, logger="tms.hudi.table.writer"):
            result = writer.write([{"id": "a", "ts": 1}], "upsert")
    finally:
        server.shutdown()
    [body] = _Refusing.bodies
    assert (tmp_path / "t" / ".hoodie" / "hoodie.properties").exists(), "a relative path is from the working dir"
    assert body["basePath"] == str(tmp_path / "t") and body["commitTime"] == result.instant
    assert f"commit callback for {result.instant} refused by http://127.0.0.1:{server.server_port}/cb (401): " \
           "unknown table, or a wrong HUDI-CALLBACK-KEY" in caplog.text
