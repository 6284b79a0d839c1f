"""An engine's pieces on disk: its job code found by path or by version (a folder or a zip holding
jobs/run.py), its spark-submit, its Spark version, and the py-files built from a zipped code version."""
from __future__ import annotations

import zipfile

import pytest

from tms.errors import ConfigError
from tms.execute.engine_code import (
    EngineSpec,
    check_pyspark_version,
    engine_job_files,
    resolve_code_path,
    spark_submit_of,
)


def _folder(root, version: str) -> str:
    (root / version / "jobs").mkdir(parents=True)
    (root / version / "jobs" / "run.py").write_text(f"# {version}\n")
    return str(root / version)


def _zip(root, version: str, *, with_tms: bool = False):
    path = root / f"{version}.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("jobs/__init__.py", "")
        zf.writestr("jobs/run.py", f"# {version}\n")
        if with_tms:
            zf.writestr("tms/__init__.py", "# its own tms\n")
    return path


def test_job_code_is_found_by_path_or_by_version_in_the_code_dir(tmp_path):
    folder = _folder(tmp_path, "1.0")
    archive = _zip(tmp_path, "2.0")
    assert resolve_code_path(folder, "1.0", None) == folder
    assert resolve_code_path(None, "1.0", tmp_path) == folder
    assert resolve_code_path(None, "2.0", tmp_path) == str(archive)
    with pytest.raises(ConfigError, match=r"no job code at .*3\.0 or .*3\.0\.zip"):
        resolve_code_path(None, "3.0", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="a folder or zip with jobs/run.py"):
        resolve_code_path(str(tmp_path / "empty"), "x", None)


def test_spark_submit_and_the_spark_version_are_checked(tmp_path):
    assert spark_submit_of(None, None) is None
    (tmp_path / "bin").mkdir()
    submit = tmp_path / "bin" / "spark-submit"
    submit.write_text("#!/bin/sh\n")
    with pytest.raises(ConfigError, match="is not an executable file"):
        spark_submit_of(None, str(submit))
    submit.chmod(0o755)
    assert spark_submit_of(str(tmp_path), None) == str(submit)
    (tmp_path / "RELEASE").write_text("Spark 3.5.3 (git revision 32232e9ed33) built for Hadoop 3.3.4\n")
    check_pyspark_version(str(tmp_path), "3.5.3")
    with pytest.raises(ConfigError, match="does not match the Spark 3.5.3"):
        check_pyspark_version(str(tmp_path), "3.4.1")


def test_a_zipped_code_version_ships_its_own_packages_and_entry_point(tmp_path):
    own = EngineSpec(name="z", code_path=str(_zip(tmp_path, "2.0", with_tms=True)), version_key="a")
    py_files, entry = engine_job_files(own, tmp_path / "cache")
    assert entry.read_text() == "# 2.0\n"
    with zipfile.ZipFile(py_files) as zf:
        assert zf.read("tms/__init__.py") == b"# its own tms\n" and zf.read("jobs/run.py") == b"# 2.0\n"
    assert engine_job_files(own, tmp_path / "cache") == (py_files, entry), "built once per engine version"
    bare = EngineSpec(name="z", code_path=str(_zip(tmp_path, "3.0")), version_key="b")
    py_files, _ = engine_job_files(bare, tmp_path / "cache")
    with zipfile.ZipFile(py_files) as zf:
        assert "tms/execute/engine_code.py" in zf.namelist(), "the installed tms, as the code has none"


def test_a_path_the_system_refuses_is_one_line_too():
    with pytest.raises(ConfigError, match="cannot read the engine's job code"):
        resolve_code_path("/" + "x" * 300, "1.0", None)
    with pytest.raises(ConfigError, match="cannot check the engine's spark-submit"):
        spark_submit_of("/" + "x" * 300, None)
