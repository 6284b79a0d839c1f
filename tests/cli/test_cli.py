"""The `tms` command line: inspect, read, write, with one clear line for every bad input."""
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from support import hudi_rs_table, rows
from typer.testing import CliRunner

from tms.cli import app

runner = CliRunner()


def tms(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _create(tmp_path, version=8, table_type="MERGE_ON_READ"):
    path = tmp_path / "t"
    recs = _jsonl(tmp_path / "r.jsonl", [{"id": i, "ts": 1, "city": ["a", "b"][i % 2]} for i in range(4)])
    code, out, err = tms("write", path, "--records", recs, "--create", "--table-type", table_type,
                         "--table-version", version, "--key", "id", "--ordering", "ts", "--partition", "city")
    assert code == 0, err
    return path, out.strip()


def test_help_everywhere():
    for cmd in ([], ["inspect"], ["read"], ["write"], ["demo"], ["up"]):
        code, out, _ = tms(*cmd, "--help")
        assert code == 0 and "Usage" in out


@pytest.mark.parametrize("version", [6, 8])
def test_write_read_inspect(tmp_path, version):
    path, first = _create(tmp_path, version)
    assert len(first) == 17 and first.isdigit()
    upd = _jsonl(tmp_path / "u.jsonl", [{"id": 1, "ts": 2, "city": "b"}])
    code, second, _ = tms("write", path, "--records", upd)
    assert code == 0
    dele = _jsonl(tmp_path / "d.jsonl", [{"id": 2, "city": "a"}])
    assert tms("write", path, "--records", dele, "--op", "delete")[0] == 0
    code, out, _ = tms("read", path)
    got = sorted((r["id"], r["ts"]) for r in map(json.loads, out.splitlines()))
    assert got == [(0, 1), (1, 2), (3, 1)]
    assert sorted((r["id"], r["ts"]) for r in rows(hudi_rs_table(path))) == got
    code, out, _ = tms("read", path, "--as-of", first)
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [0, 1, 2, 3]
    assert len(tms("read", path, "--limit", "2")[1].splitlines()) == 2
    code, out, _ = tms("inspect", path, "--json")
    doc = json.loads(out)
    assert doc["config"]["version"] == version and len(doc["timeline"]) == 3
    assert {g["partition"] for g in doc["file_groups"]} == {"city=a", "city=b"}
    code, out, _ = tms("inspect", path)
    assert code == 0 and "timeline (3 instants)" in out and second.strip() in out


def test_leave_inflight_and_complete(tmp_path):
    path, _ = _create(tmp_path)
    upd = _jsonl(tmp_path / "u.jsonl", [{"id": 9, "ts": 2, "city": "b"}])
    code, instant, _ = tms("write", path, "--records", upd, "--leave-inflight")
    instant = instant.strip()
    assert code == 0
    doc = json.loads(tms("inspect", path, "--json")[1])
    assert doc["inflight_writes"] == [{"instant": instant, "action": "deltacommit", "state": "INFLIGHT"}]
    assert 9 not in [json.loads(line)["id"] for line in tms("read", path)[1].splitlines()]
    assert tms("write", path, "--complete", instant)[0] == 0
    assert 9 in [json.loads(line)["id"] for line in tms("read", path)[1].splitlines()]
    code, _, err = tms("write", path, "--complete", instant)
    assert code == 1 and "already completed" in err


def test_bad_input_exits_non_zero_with_one_line(tmp_path, fixture_tables):
    path, _ = _create(tmp_path)
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"id": 1, "ts": 1, "city": "a"}\n{not json\n')
    wrong_type = _jsonl(tmp_path / "wrong.jsonl", [{"id": "x", "ts": 1, "city": "a"}])
    unknown = _jsonl(tmp_path / "unknown.jsonl", [{"id": 1, "ts": 1, "city": "a", "extra": 1}])
    v5 = tmp_path / "v5"
    shutil.copytree(fixture_tables["cow_v6_nonpartitioned"], v5)
    props = v5 / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    timeline_before = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())
    cases = [
        (["inspect", tmp_path / "nope"], "no Hudi table"),
        (["read", tmp_path], "no Hudi table"),
        (["read", path, "--as-of", "yesterday"], "not an instant time"),
        (["inspect", v5], "version 5 is not supported"),
        (["write", path, "--records", bad_json], "bad.jsonl:2: not JSON"),
        (["write", path, "--records", wrong_type], "do not match the table schema"),
        (["write", path, "--records", unknown], "not in the table schema"),
        (["write", path, "--records", tmp_path / "missing.jsonl"], "cannot read"),
        (["write", path, "--records", unknown, "--op", "merge"], "--op must be"),
        (["write", path], "--records FILE is required"),
        (["write", tmp_path / "new", "--records", wrong_type, "--create"], "--create needs --key"),
        (["write", tmp_path / "new", "--records", wrong_type, "--create", "--key", "id", "--table-version", "7"],
         "--table-version must be 6, 8 or 9"),
        (["write", path, "--complete", "20990101000000000"], "no instant"),
    ]
    for args, message in cases:
        code, out, err = tms(*args)
        assert code == 1, (args, out, err)
        assert message in err and len(err.strip().splitlines()) == 1, (args, err)
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == timeline_before


class _Callbacks(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.headers.get("HUDI-CALLBACK-KEY"), json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_commit_callback_posts_hudis_payload(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Callbacks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/api/v1/hudi/callback"
    try:
        path = tmp_path / "t"
        recs = _jsonl(tmp_path / "r.jsonl", [{"id": 1, "ts": 1}])
        code, instant, err = tms("write", path, "--records", recs, "--create", "--key", "id", "--ordering", "ts",
                                 "--callback-url", url, "--callback-key", "s3cret")
        assert code == 0, err
    finally:
        server.shutdown()
    [(key, body)] = _Callbacks.received
    assert key == "s3cret"
    assert body["commitTime"] == instant.strip() and body["tableName"] == "t"
    assert body["basePath"] == str(path) and body["commitActionType"] == "deltacommit"
    assert body["hoodieWriteStat"][0]["numInserts"] == 1 and "schema" in body["extraMetadata"]


def test_console_script_is_installed_and_its_piped_help_is_not_cut_at_80_columns():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    out = subprocess.run([sys.executable, "-m", "tms.cli", "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "inspect" in out.stdout
    widest = max(len(line.rstrip()) for line in out.stdout.splitlines())
    assert widest > 80, out.stdout
    # a line of the root help, whole at 100 columns (cut after "(tms --json tasks" at 80)
    assert "--token go before or after the subcommand (tms --json tasks list, tms tasks list --json)" in out.stdout


def test_version_is_the_installed_package_version():
    code, out, _ = tms("--version")
    assert code == 0 and out == f"tms {importlib.metadata.version('tms')}\n"
