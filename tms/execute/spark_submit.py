"""Submitting a plan to Spark: the project's code shipped as a zip built on the fly (`--py-files`), the job's
entry point `jobs/run.py`, and the `spark-submit` command line."""
from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tms.hudi.errors import HudiError
from tms.storage_roots import hadoop_conf
from tms.table_context import child_env

if TYPE_CHECKING:
    from tms.config import Settings

PY_FILES_NAME = "tms-jobs.zip"
_PACKAGES = ("tms", "jobs")
# The driver of a plan's job schedules one task per file group and collects their write stats: the work is in
# the Python workers. The JVM's client compiler and serial collector start it ~0.5 s sooner; a queue's or an
# engine's own `spark.driver.extraJavaOptions` replaces these.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _package_dir(name: str) -> Path:
    module = __import__(name)
    if module.__file__ is None:  # a namespace package: not one of ours
        raise HudiError(f"package {name} has no folder to ship")
    return Path(module.__file__).resolve().parent


def build_py_files(dest_dir: Path) -> Path:
    """A zip of the `tms` and `jobs` packages' Python sources, for executors (and a cluster driver) to
    import. Third-party dependencies (pyarrow, fastavro, polars, fsspec) must be on the cluster's Python."""
    path = Path(dest_dir) / PY_FILES_NAME
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in _PACKAGES:
            root = _package_dir(name)
            for source in sorted(root.rglob("*.py")):
                zf.write(source, source.relative_to(root.parent).as_posix())
    return path


def entry_point() -> Path:
    return _package_dir("jobs") / "run.py"


def spark_home() -> Path:
    """$SPARK_HOME, else the Spark distribution inside the installed pyspark package."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    try:  # optional here and heavy: only where no SPARK_HOME is set
        import pyspark
    except ImportError:
        raise HudiError("no Spark found: set SPARK_HOME or install pyspark") from None
    return Path(pyspark.__file__).resolve().parent


def find_spark_submit() -> str:
    return str(spark_home() / "bin" / "spark-submit")


def spark_submit_command(table_path: str, instant: str, *, py_files: Path, master: str = "local[*]",
                         conf: dict[str, str] | None = None, service: str | None = None,
                         fence_url: str | None = None, options: dict[str, str] | None = None,
                         spark_submit: str | None = None, entry: Path | None = None,
                         settings_conf: dict[str, str] | None = None) -> list[str]:
    """`options`: the table's lock options, passed to the job as `--option key=value`. `spark_submit` and
    `entry`: an engine's own spark-submit and job entry point (default: this installation's). `settings_conf`:
    the settings' confs (`executor_settings_conf`)."""
    confs = {"spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS, **(settings_conf or {}), **(conf or {})}
    cmd = [spark_submit or find_spark_submit(), "--master", with_task_retries(master, confs),
           "--name", f"tms {service or 'plan'} {instant}", "--py-files", str(py_files)]
    for key, value in confs.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(entry or entry_point()), "--table", table_path, "--instant", instant]
    if service:  # jobs read it as --action, the name every version of the job code knows
        cmd += ["--action", service]
    if fence_url:
        cmd += ["--fence-url", fence_url]
    for key, value in (options or {}).items():
        cmd += ["--option", f"{key}={value}"]
    return cmd


def warm_engine_command(socket_path: Path, *, py_files: Path, master: str, conf: dict[str, str],
                        name: str, settings_conf: dict[str, str] | None = None) -> list[str]:
    """spark-submit of a warm engine (`jobs/warm_engine.py`): one long-running application that runs the
    plans it is handed over the Unix socket at `socket_path`."""
    confs = {**(settings_conf or {}), **conf}
    cmd = [find_spark_submit(), "--master", with_task_retries(master, confs), "--name", name,
           "--py-files", str(py_files)]
    for key, value in confs.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd + [str(_package_dir("jobs") / "warm_engine.py"), "--socket", str(socket_path), "--name", name]


def executor_settings_conf(settings: Settings) -> dict[str, str]:
    """The settings the format library needs, for executors (`child_env`: the driver inherits this process's
    environment, executors on a cluster do not), each storage root's Hadoop configuration, without its
    credentials (the job's driver sets those: `jobs.spark_runner.driver_conf`), and the attempts of a part."""
    conf = {f"spark.executorEnv.{name}": value for name, value in child_env(settings).items()}
    return {**conf, **hadoop_conf(settings.storage_root_options),
            MAX_FAILURES: str(settings.worker.task_max_failures)}


MAX_FAILURES = "spark.task.maxFailures"
_LOCAL = re.compile(r"local(\[(\*|[0-9]+)\])?")


def with_task_retries(master: str, conf: dict[str, str]) -> str:
    """The master that attempts a failed Spark task as often as spark.task.maxFailures says: a local master
    ignores the setting (one attempt) and takes it in its own `local[N,F]` form instead."""
    local, failures = _LOCAL.fullmatch(master.strip()), conf.get(MAX_FAILURES)
    if local is None or failures is None:
        return master
    return f"local[{local.group(2) or 1},{failures}]"


def spark_submit_env(master: str) -> dict[str, str]:
    """The environment of spark-submit. A client-mode driver runs here, on this Python (which has the
    dependencies); executors do too on a local master, and on a cluster use the cluster's Python
    (spark.pyspark.python)."""
    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home())
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    if _on_loopback(master):
        # Every Spark process runs on this machine and talks over loopback: a driver that bound to the
        # address of the host name's interface instead would not be reached by executors listening on it.
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def _on_loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = urlsplit(master).hostname or ""
    return host == "localhost" or host.startswith("127.")
