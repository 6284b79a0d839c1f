"""Submitting a plan to Spark: the project's code shipped as a zip built on the fly (`--py-files`), the job's
entry point `jobs/run.py`, and the `spark-submit` command line."""
from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path

from tms.hudi.errors import HudiError

PY_FILES_NAME = "tms-jobs.zip"
_PACKAGES = ("tms", "jobs")


def _package_dir(name: str) -> Path:
    module = __import__(name)
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


def find_spark_submit() -> str:
    """$SPARK_HOME/bin/spark-submit, else the one installed with pyspark beside this Python, else PATH's."""
    candidates = []
    if os.environ.get("SPARK_HOME"):
        candidates.append(Path(os.environ["SPARK_HOME"]) / "bin" / "spark-submit")
    candidates.append(Path(sys.executable).parent / "spark-submit")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("spark-submit")
    if not found:
        raise HudiError("spark-submit not found: set SPARK_HOME or install pyspark")
    return found


def spark_submit_command(table_path: str, instant: str, *, py_files: Path, master: str = "local[*]",
                         conf: dict[str, str] | None = None, action: str | None = None,
                         fence_url: str | None = None) -> list[str]:
    cmd = [find_spark_submit(), "--master", master, "--name", f"tms {action or 'plan'} {instant}",
           "--py-files", str(py_files)]
    for key, value in (conf or {}).items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(entry_point()), "--table", table_path, "--instant", instant]
    if action:
        cmd += ["--action", action]
    if fence_url:
        cmd += ["--fence-url", fence_url]
    return cmd


def spark_submit_env(master: str) -> dict[str, str]:
    """The environment for spark-submit: on a local master the job's Python is this one (it has the
    dependencies); on a cluster it is the cluster's (spark.pyspark.python)."""
    env = dict(os.environ)
    if master.startswith("local"):
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return env
