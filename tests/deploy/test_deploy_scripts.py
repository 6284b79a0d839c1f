"""The scripts the images run, run here: the health check (`tms-healthcheck`, against a scratch PostgreSQL and
a local HTTP server), the entry point's dispatch (`tms-entrypoint`, with stand-ins for tms and java on PATH)
and the queue one-shot (`tms-put-queue`, against a local HTTP server)."""
from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from deploy_support import DEPLOY, REPO

HEALTHCHECK = DEPLOY / "healthcheck.py"
ENTRYPOINT = DEPLOY / "entrypoint.sh"
PUT_QUEUE = DEPLOY / "put_queue.py"


def _run(argv, env=None, **kwargs):
    base = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    return subprocess.run(argv, env={**base, "PYTHONPATH": str(REPO), **(env or {})}, capture_output=True,
                          text=True, timeout=60, **kwargs)



def test_the_heartbeat_probe_imports_no_format_library():
    """The probe runs every few seconds in every container: the settings it reads must not bring the format
    library (polars, pyarrow) or the ORM with them (on a loaded machine that import took 85 s)."""
    probe = "import sys, tms.config; print(sorted(m for m in ('polars', 'pyarrow', 'sqlalchemy') if m in sys.modules))"
    result = _run([sys.executable, "-c", probe])
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr

# --- tms-healthcheck heartbeat -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def database_url():
    from tms.db.testing import scratch_database
    with scratch_database() as url:
        yield url


def _beat(url: str, role: str, host: str, age_seconds: float = 0) -> None:
    from sqlalchemy import text

    from tms.db import Database, InstanceRepo
    database = Database(url, pool_size=1)
    try:
        with database.transaction() as session:
            session.execute(text("DELETE FROM instances"))
            if role:
                InstanceRepo(session).heartbeat(f"{host}:1:test", roles=[role], host=host, pid=1, version="test")
                session.execute(text("UPDATE instances SET heartbeat_at = now() - make_interval(secs => :age)"),
                                {"age": age_seconds})
    finally:
        database.dispose()


def _heartbeat_check(url: str, role: str, **env):
    return _run([sys.executable, str(HEALTHCHECK), "heartbeat", role],
                env={"TMS_DATABASE_URL": url, "TMS_HEARTBEAT_SECONDS": "10", **env})


def test_heartbeat_check_passes_while_the_role_beats_on_this_host(database_url):
    _beat(database_url, "planner", socket.gethostname(), age_seconds=5)
    result = _heartbeat_check(database_url, "planner")
    assert result.returncode == 0, result.stderr


def test_heartbeat_check_fails_on_a_stale_beat(database_url):
    _beat(database_url, "planner", socket.gethostname(), age_seconds=3 * 10 + 11)
    result = _heartbeat_check(database_url, "planner")
    assert result.returncode == 1 and "heartbeat" in result.stderr and "old" in result.stderr
    # the limit follows TMS_HEARTBEAT_SECONDS (the beat made 41 s old again: the first check may take many
    # seconds on a loaded machine; a limit of minutes leaves room for this one)
    _beat(database_url, "planner", socket.gethostname(), age_seconds=3 * 10 + 11)
    assert _heartbeat_check(database_url, "planner", TMS_HEARTBEAT_SECONDS="60").returncode == 0


def test_heartbeat_check_fails_for_another_role_or_host(database_url):
    _beat(database_url, "worker", socket.gethostname())
    result = _heartbeat_check(database_url, "planner")
    assert result.returncode == 1 and "no planner heartbeat" in result.stderr
    _beat(database_url, "planner", "some-other-pod")
    assert _heartbeat_check(database_url, "planner").returncode == 1


def test_heartbeat_check_fails_without_a_database(tmp_path):
    result = _run([sys.executable, str(HEALTHCHECK), "heartbeat", "planner"], cwd=tmp_path)
    assert result.returncode == 1 and "TMS_DATABASE_URL" in result.stderr
    assert not (tmp_path / ".tms").exists(), "a health check must never start an embedded database"
    result = _heartbeat_check("postgresql://tms:x@127.0.0.1:1/tms", "planner")
    assert result.returncode == 1 and "database" in result.stderr


def test_heartbeat_check_passes_against_a_running_planner(database_url, tmp_path):
    """The real role: a `tms planner` process records the heartbeat the check looks for."""
    import time
    _beat(database_url, "", "")
    env = {"TMS_DATABASE_URL": database_url, "TMS_HEARTBEAT_SECONDS": "1", "TMS_DATA_DIR": str(tmp_path)}
    base = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    planner = subprocess.Popen([sys.executable, "-m", "tms.cli", "planner"], cwd=REPO,
                               env={**base, "PYTHONPATH": str(REPO), **env},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            result = _heartbeat_check(database_url, "planner", TMS_HEARTBEAT_SECONDS="1")
            if result.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert result.returncode == 0, result.stderr
    finally:
        planner.terminate()
        planner.wait(timeout=30)


# --- tms-healthcheck http -------------------------------------------------------------------------------
class _Server:
    """A local HTTP server answering each path with a fixed status; records PUT requests."""

    def __init__(self, statuses: dict[str, int]):
        self.statuses = statuses
        self.requests: list[tuple[str, str, dict, bytes]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.command, self.path, dict(self.headers), body))
                status = outer.statuses.get(self.path, 404)
                payload = json.dumps({"detail": f"status {status}"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            do_GET = do_PUT = _answer

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    servers = []

    def make(statuses):
        servers.append(_Server(statuses))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def test_http_check(server):
    s = server({"/readyz": 200, "/down": 503})
    assert _run([sys.executable, str(HEALTHCHECK), "http", f"{s.url}/readyz"]).returncode == 0
    result = _run([sys.executable, str(HEALTHCHECK), "http", f"{s.url}/down"])
    assert result.returncode == 1 and "503" in result.stderr
    port = s.httpd.server_address[1]
    s.close()
    result = _run([sys.executable, str(HEALTHCHECK), "http", f"http://127.0.0.1:{port}/readyz"])
    assert result.returncode == 1 and "unhealthy" in result.stderr


def test_http_check_defaults_to_this_containers_readyz(server):
    s = server({"/readyz": 200})
    port = s.url.rsplit(":", 1)[1]
    assert _run([sys.executable, str(HEALTHCHECK), "http"], env={"TMS_PORT": port}).returncode == 0
    assert _run([sys.executable, str(HEALTHCHECK)]).returncode == 2


# --- tms-entrypoint -------------------------------------------------------------------------------------
@pytest.fixture
def fake_bin(tmp_path):
    """A PATH whose tms, java, spark-class and spark-submit print their name and arguments, one per line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("tms", "java", "spark-class", "spark-submit"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho {name}\nfor a in "$@"; do echo "$a"; done\n')
        script.chmod(0o755)
    return bin_dir


def _entrypoint(fake_bin, *args, env=None):
    result = subprocess.run(["bash", str(ENTRYPOINT), *args], capture_output=True, text=True, timeout=30,
                            env={"PATH": f"{fake_bin}:/usr/bin:/bin", **(env or {})})
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.parametrize("args", [["serve"], ["planner"], ["worker", "--slots", "4"], ["manager"],
                                  ["db", "upgrade"]])
def test_entrypoint_runs_tms_subcommands(fake_bin, args):
    assert _entrypoint(fake_bin, *args) == ["tms", *args]


def test_entrypoint_runs_spark_and_scripts_as_given(fake_bin):
    args = ["spark-class", "org.apache.spark.deploy.master.Master", "--port", "7077"]
    assert _entrypoint(fake_bin, *args) == args


def test_entrypoint_starts_a_kubernetes_executor(fake_bin):
    env = {"SPARK_HOME": "/opt/spark", "SPARK_EXECUTOR_MEMORY": "1024m", "SPARK_DRIVER_URL": "spark://d:7078",
           "SPARK_EXECUTOR_ID": "3", "SPARK_EXECUTOR_CORES": "2", "SPARK_APPLICATION_ID": "spark-abc",
           "SPARK_EXECUTOR_POD_IP": "10.0.0.9", "SPARK_EXECUTOR_POD_NAME": "tms-exec-3",
           "SPARK_RESOURCE_PROFILE_ID": "0",
           **{f"SPARK_JAVA_OPT_{i}": f"-Dopt{i}" for i in (10, 2, 0, 1)}}
    argv = _entrypoint(fake_bin, "executor", env=env)
    assert argv[0] == "java"
    assert argv[1:5] == ["-Dopt0", "-Dopt1", "-Dopt2", "-Dopt10"], "Java options in Spark's numeric order"
    assert "-Xmx1024m" in argv and "-Xms1024m" in argv
    assert argv[argv.index("-cp") + 1] == "/opt/spark/jars/*"
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in argv
    flags = dict(zip(argv[:-1], argv[1:], strict=True))
    assert flags["--driver-url"] == "spark://d:7078" and flags["--executor-id"] == "3"
    assert flags["--cores"] == "2" and flags["--app-id"] == "spark-abc"
    assert flags["--hostname"] == "10.0.0.9" and flags["--podName"] == "tms-exec-3"


def test_entrypoint_starts_a_kubernetes_driver_in_client_mode(fake_bin):
    argv = _entrypoint(fake_bin, "driver", "--properties-file", "/opt/spark/conf/spark.properties",
                       env={"SPARK_DRIVER_BIND_ADDRESS": "10.0.0.5"})
    assert argv[:5] == ["spark-submit", "--deploy-mode", "client", "--conf", "spark.driver.bindAddress=10.0.0.5"]
    assert argv[5:] == ["--properties-file", "/opt/spark/conf/spark.properties"]


# --- tms-put-queue --------------------------------------------------------------------------------------
def test_put_queue_stores_each_file(server, tmp_path):
    s = server({"/api/v1/queues/standalone": 200})
    queue = DEPLOY / "queues" / "standalone.json"
    result = _run([sys.executable, str(PUT_QUEUE), str(queue)],
                  env={"TMS_URL": s.url, "TMS_ADMIN_TOKEN": "t0ken"})
    assert result.returncode == 0, result.stderr
    method, path, headers, body = s.requests[-1]
    assert (method, path) == ("PUT", "/api/v1/queues/standalone")
    assert headers["Authorization"] == "Bearer t0ken"
    assert json.loads(body) == json.loads(queue.read_text())


def test_put_queue_reports_the_servers_refusal(server, tmp_path):
    s = server({"/api/v1/queues/bad": 422})
    (tmp_path / "bad.json").write_text('{"kind": "nowhere"}')
    result = _run([sys.executable, str(PUT_QUEUE), str(tmp_path / "bad.json")],
                  env={"TMS_URL": s.url, "TMS_ADMIN_TOKEN": "t0ken"})
    assert result.returncode == 1 and "HTTP 422" in result.stderr and "status 422" in result.stderr
    result = _run([sys.executable, str(PUT_QUEUE), str(tmp_path / "bad.json")], env={"TMS_URL": s.url})
    assert result.returncode == 1 and "TMS_ADMIN_TOKEN" in result.stderr


def test_put_queue_waits_for_the_service(tmp_path):
    (tmp_path / "q.json").write_text("{}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = _run([sys.executable, str(PUT_QUEUE), str(tmp_path / "q.json")],
                  env={"TMS_URL": f"http://127.0.0.1:{port}", "TMS_ADMIN_TOKEN": "t", "TMS_WAIT_SECONDS": "3"})
    assert result.returncode == 1 and "queue q" in result.stderr
