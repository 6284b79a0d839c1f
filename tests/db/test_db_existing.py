"""Finding the database of a running `tms up` (what `tms tokens create` uses): by the data directory, from any
directory when one instance runs, never by creating one."""
from __future__ import annotations

import os
import subprocess

import pytest

from tms import local_instances
from tms.config import Settings
from tms.db.errors import DatabaseError
from tms.db.startup import existing_database


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    monkeypatch.setenv(local_instances.RUNTIME_DIR_ENV, str(tmp_path / "run"))
    return tmp_path / "run"


def _instance(data_dir, pid: int = os.getpid(), url: str = "postgresql://postgres@/tms?host=/sock"):
    return local_instances.LocalInstance(pid, str(data_dir.resolve()), url, "http://127.0.0.1:8080")


def test_the_configured_url_comes_first(runtime, tmp_path):
    local_instances.record(_instance(tmp_path / "a"))
    found = existing_database(Settings(database_url="postgresql://db/tms", data_dir=tmp_path / "b"))
    assert (found.url, found.origin) == ("postgresql://db/tms", "TMS_DATABASE_URL")


def test_the_running_instance_of_the_data_dir_or_the_only_one(runtime, tmp_path):
    (tmp_path / "a").mkdir()
    path = local_instances.record(_instance(tmp_path / "a"))
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    mine = existing_database(Settings(data_dir=tmp_path / "a"))
    assert mine.url == "postgresql://postgres@/tms?host=/sock"
    assert mine.origin == f"the TMS running from {(tmp_path / 'a').resolve()} (pid {os.getpid()})"
    assert existing_database(Settings(data_dir=tmp_path / "elsewhere")).url == mine.url  # the only one running
    local_instances.forget(tmp_path / "a")
    with pytest.raises(DatabaseError, match="found no TMS database: TMS_DATABASE_URL is unset"):
        existing_database(Settings(data_dir=tmp_path / "elsewhere"))
    assert not (tmp_path / "elsewhere").exists()


def test_records_of_stopped_instances_are_ignored_and_several_need_a_choice(runtime, tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    local_instances.record(_instance(tmp_path / "dead", pid=gone.pid))
    assert local_instances.running() == [] and not list(runtime.glob("instance-*.json"))
    local_instances.record(_instance(tmp_path / "one"))
    local_instances.record(_instance(tmp_path / "two"))
    with pytest.raises(DatabaseError, match="several `tms up` run"):
        existing_database(Settings(data_dir=tmp_path / "three"))
    assert existing_database(Settings(data_dir=tmp_path / "two")).origin.startswith(
        f"the TMS running from {(tmp_path / 'two').resolve()}")
