"""A Spark standalone cluster (one master, one worker) on localhost, started from the installed PySpark."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

from tms.execute.spark_submit import spark_home, spark_submit_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def standalone_cluster(work_dir: Path):
    """Yields the master's URL (spark://127.0.0.1:PORT) once a worker has registered; stops both after."""
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = spark_submit_env("spark://")
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    quiet = {"env": env, "start_new_session": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = [subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                 "--port", str(port), "--webui-port", str(ui)], **quiet),
               subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                 "--cores", "2", "--memory", "2g", "--webui-port", str(free_port()),
                                 "--work-dir", str(work_dir), url], **quiet)]
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{ui}/json/", timeout=2).json().get("aliveworkers"):
                    break
            except (httpx.HTTPError, ValueError):
                pass
            assert time.monotonic() < deadline, "the standalone cluster did not start"
            time.sleep(0.5)
        yield url
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
