"""The compose file's Spark standalone master and worker, run here with their commands from
docker-compose.yml (host names and ports mapped to localhost) on the pyspark package's Spark, as the
tms-spark image runs them: the cluster forms with the declared resources, and their health checks pass."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from deploy_support import DEPLOY, compose_command, compose_healthcheck, compose_services
from spark_cluster import free_port

pytestmark = pytest.mark.slow


def _swap(argv: list[str], replacements: dict[str, str]) -> list[str]:
    out = []
    for arg in argv:
        for old, new in replacements.items():
            arg = arg.replace(old, new)
        out.append(arg)
    return out


def test_compose_spark_cluster_starts_and_passes_its_health_checks(tmp_path):
    from tms.execute.spark_submit import spark_home, spark_submit_env

    services = compose_services()
    master_cmd, worker_cmd = compose_command(services["spark-master"]), compose_command(services["spark-worker"])
    master_port, master_ui, worker_ui = free_port(), free_port(), free_port()
    mapping = {"spark-master": "127.0.0.1", "7077": str(master_port)}
    master = _swap(master_cmd, {**mapping, "8080": str(master_ui)})
    worker = _swap(worker_cmd, {**mapping, "8081": str(worker_ui)})
    worker[2:2] = ["--host", "127.0.0.1", "--work-dir", str(tmp_path)]
    assert master[0] == worker[0] == "spark-class"
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = spark_submit_env("spark://")
    quiet = {"env": env, "start_new_session": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = [subprocess.Popen([spark_class, *master[1:]], **quiet),
               subprocess.Popen([spark_class, *worker[1:]], **quiet)]
    try:
        deadline = time.monotonic() + 120
        status = {}
        while not status.get("aliveworkers"):
            assert time.monotonic() < deadline, "the standalone cluster did not form"
            time.sleep(1)
            try:
                status = httpx.get(f"http://127.0.0.1:{master_ui}/json/", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                pass
        cores = int(worker_cmd[worker_cmd.index("--cores") + 1])
        memory = worker_cmd[worker_cmd.index("--memory") + 1]
        assert status["cores"] == cores and status["memory"] == int(memory[:-1]) * 1024
        for name, ui, default in (("spark-master", master_ui, "8080"), ("spark-worker", worker_ui, "8081")):
            check = compose_healthcheck(services[name])
            assert check[1:3] == ["tms-healthcheck", "http"]
            url = check[3].replace(f":{default}/", f":{ui}/")
            result = subprocess.run([sys.executable, str(DEPLOY / "healthcheck.py"), "http", url],
                                    capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, f"{name}: {result.stderr}"
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
