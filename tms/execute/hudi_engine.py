"""A Hudi engine's job: spark-submit, on the engine's own Spark (one Hudi's Spark bundle runs on, e.g. Spark
3.5), of `jobs/hudi_procedures.py`, which executes the instant TMS planned with Hudi's Spark SQL procedures.
Hudi's bundle comes from the engine's Spark confs (`spark.jars` or `spark.jars.packages`). Which services it
executes is the registry's `JAVA_EXECUTED`; any other is refused with one line before anything is launched."""
from __future__ import annotations

import os
from pathlib import Path

from tms.errors import ConfigError
from tms.table_services import JAVA_EXECUTED

from .spark_submit import _package_dir

BUNDLE_CONFS = ("spark.jars", "spark.jars.packages")


def check_hudi_engine(spark_submit: str | None, spark_conf: dict[str, str]) -> None:
    """ConfigError unless the engine names its own Spark and Hudi's bundle (the worker's Spark 4 runs no
    Hudi bundle)."""
    if not spark_submit:
        raise ConfigError("a hudi engine needs its own spark_submit or spark_home (a Spark Hudi's bundle runs on)")
    if not any(spark_conf.get(key) for key in BUNDLE_CONFS):
        raise ConfigError("a hudi engine needs Hudi's Spark bundle in its spark_conf "
                          "(spark.jars or spark.jars.packages)")


def refusal(service: str) -> str | None:
    """The one line saying a Hudi engine cannot execute `service` (None: it can)."""
    if service in JAVA_EXECUTED:
        return None
    return f"a hudi engine executes only {', '.join(JAVA_EXECUTED)} plans; it cannot execute a TMS-planned {service}"


def hudi_job_command(*, spark_submit: str, table_path: str, instant: str, service: str, master: str,
                     conf: dict[str, str], fence_url: str | None = None,
                     options: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(command, environment) of the job. `conf`: the engine's confs under the queue's and the sizing's."""
    reason = refusal(service)
    if reason:
        raise ConfigError(reason)
    cmd = [spark_submit, "--master", master, "--name", f"tms hudi {service} {instant}"]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(_package_dir("jobs") / "hudi_procedures.py"), "--table", table_path, "--instant", instant,
            "--action", service]
    if fence_url:
        cmd += ["--fence-url", fence_url]
    for key, value in (options or {}).items():
        cmd += ["--option", f"{key}={value}"]
    return cmd, hudi_job_env(spark_submit)


def hudi_job_env(spark_submit: str) -> dict[str, str]:
    """The engine's Spark and, when its spark-submit sits in a Python environment's bin/, that Python for the
    driver (not the worker's, whose PySpark is another version)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    bin_dir = Path(spark_submit).parent
    python = bin_dir / "python"
    if python.is_file():
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = str(python)
    else:
        env["SPARK_HOME"] = str(Path(spark_submit).resolve().parent.parent)
    return env
