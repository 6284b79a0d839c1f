"""A registered engine's pieces on disk: the Spark it submits with (a distribution's bin/spark-submit, or a
spark-submit named directly) and the version of the job code it runs (a folder or zip holding the `jobs`
package, optionally its own `tms`). Checked when the engine is registered, so a wrong path is refused with one
line before anything is stored; used by the worker to build the job's command line."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from tms.errors import ConfigError

from .spark_submit import PY_FILES_NAME, _package_dir

ENTRY = "jobs/run.py"
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class EngineSpec:
    """What a worker needs of an engine to launch a job on it."""
    name: str
    code_path: str
    spark_submit: str | None = None  # None: the worker's own Spark
    spark_conf: dict[str, str] = field(default_factory=dict)
    version_key: str = ""  # changes when the engine is replaced (its py-files are rebuilt)
    kind: str = "tms"  # hudi: Hudi's procedures execute the plan (tms/execute/hudi_engine.py)


def spark_submit_of(spark_home: str | None, spark_submit: str | None) -> str | None:
    """The spark-submit an engine names (None: the worker's own); ConfigError if it is not there."""
    try:
        return _spark_submit_of(spark_home, spark_submit)
    except OSError as exc:  # a name too long, a folder not readable
        raise ConfigError(f"cannot check the engine's spark-submit: {exc.strerror}") from None


def _spark_submit_of(spark_home: str | None, spark_submit: str | None) -> str | None:
    if spark_submit:
        path = Path(spark_submit)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ConfigError(f"spark_submit {spark_submit} is not an executable file")
        return str(path)
    if spark_home:
        path = Path(spark_home) / "bin" / "spark-submit"
        if not path.is_file():
            raise ConfigError(f"spark_home {spark_home} has no bin/spark-submit")
        return str(path)
    return None


def spark_version(spark_home: str) -> str | None:
    """The Spark version a distribution says it is (its RELEASE file, or the pyspark package's version)."""
    home = Path(spark_home)
    release = home / "RELEASE"
    if release.is_file():
        match = re.search(r"Spark (\S+)", release.read_text(errors="replace"))
        if match:
            return match.group(1)
    version_py = home / "version.py"  # the distribution inside an installed pyspark package
    if version_py.is_file():
        match = re.search(r"__version__\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)", version_py.read_text())
        if match:
            return match.group(1)
    return None


def check_pyspark_version(spark_home: str | None, pyspark_version: str | None) -> None:
    if not (spark_home and pyspark_version):
        return
    try:
        found = spark_version(spark_home)
    except OSError as exc:
        raise ConfigError(f"cannot read the Spark version of {spark_home}: {exc.strerror}") from None
    if found is not None and found != pyspark_version:
        raise ConfigError(f"pyspark_version {pyspark_version} does not match the Spark {found} of {spark_home}")


def resolve_code_path(code_path: str | None, code_version: str, code_dir: Path | None) -> str:
    """The job code of an engine: `code_path`, else `code_version` looked up in `code_dir` (a folder
    <dir>/<version>, or <dir>/<version>.zip). ConfigError unless it holds jobs/run.py."""
    try:
        return _resolve_code_path(code_path, code_version, code_dir)
    except (OSError, zipfile.BadZipFile) as exc:  # a name too long, an unreadable or broken zip
        raise ConfigError(f"cannot read the engine's job code: {getattr(exc, 'strerror', None) or exc}") from None


def _resolve_code_path(code_path: str | None, code_version: str, code_dir: Path | None) -> str:
    if code_path:
        candidates = [Path(code_path)]
    elif code_dir is not None:
        candidates = [Path(code_dir) / code_version, Path(code_dir) / f"{code_version}.zip"]
    else:
        raise ConfigError(f"no code_path given and no TMS_ENGINE_CODE_DIR to find code version {code_version} in")
    for path in candidates:
        if path.is_dir() and (path / ENTRY).is_file():
            return str(path.resolve())
        if path.is_file() and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                if ENTRY in zf.namelist():
                    return str(path.resolve())
    raise ConfigError(f"no job code at {' or '.join(str(c) for c in candidates)} (a folder or zip with {ENTRY})")


def python_job_command(engine: EngineSpec, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The plain Python job of the engine's code: its folder or zip first on the path. -P keeps the working
    directory off the path, so a `jobs` package there cannot shadow the engine's."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (engine.code_path, env.get("PYTHONPATH")) if p)
    return [sys.executable, "-P", "-m", "jobs.python_job", *args], env


def engine_job_files(engine: EngineSpec, cache_dir: Path) -> tuple[Path, Path]:
    """(py-files zip, entry point) of the engine's code for spark-submit, built once per engine version: the
    code's packages, plus the installed `tms` when the code does not bring its own."""
    target = Path(cache_dir) / f"{engine.name}-{_key(engine)}"
    py_files, entry = target / PY_FILES_NAME, target / "run.py"
    with _BUILD_LOCK:
        if py_files.is_file() and entry.is_file():
            return py_files, entry
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target) as tmp:
            staged = Path(tmp)
            _write_zip(Path(engine.code_path), staged / PY_FILES_NAME, staged / "run.py")
            os.replace(staged / "run.py", entry)
            os.replace(staged / PY_FILES_NAME, py_files)
    return py_files, entry


def _key(engine: EngineSpec) -> str:
    return hashlib.sha256(f"{engine.code_path}\0{engine.version_key}".encode()).hexdigest()[:12]


def _write_zip(code: Path, dest: Path, entry: Path) -> None:
    names: set[str] = set()
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
        if code.is_dir():
            for source in sorted(code.rglob("*.py")):
                name = source.relative_to(code).as_posix()
                out.write(source, name)
                names.add(name)
            shutil.copyfile(code / ENTRY, entry)
        else:
            with zipfile.ZipFile(code) as src:
                for info in src.infolist():
                    if info.filename.endswith(".py"):
                        out.writestr(info, src.read(info))
                        names.add(info.filename)
                entry.write_bytes(src.read(ENTRY))
        if not any(n.startswith("tms/") for n in names):
            root = _package_dir("tms")
            for source in sorted(root.rglob("*.py")):
                out.write(source, source.relative_to(root.parent).as_posix())
