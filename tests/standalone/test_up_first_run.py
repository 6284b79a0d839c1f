"""`tms up` on a fresh data directory, as a new user runs it: the embedded database is made once by
`tms up` itself; a stop signal (SIGTERM, SIGHUP) stops every process it started, the embedded PostgreSQL
included; `tms tokens create` from another directory finds the running instance's database (or says there
is none, creating nothing); the admin token and callback key stay the same across restarts; a role that
dies is restarted; a user's TMS_STORAGE_ROOTS is honoured; the banner's ops command works as printed. (A busy
port: test_up_port.py; roles that exit on start or keep exiting: test_up_supervisor.py.)"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx
import pytest
from support import unzip_fixture
from up_support import UpProcess, alive, clean_env, descendants, processes_naming


def _tokens_create(cwd, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tms.cli", "tokens", "create", "--role", "viewer"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _nothing_left(started: set[int], data_dir, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (alive(started) or processes_naming(str(data_dir))):
        time.sleep(0.5)
    assert not alive(started), f"left running: {alive(started)}"
    assert not processes_naming(str(data_dir)), processes_naming(str(data_dir))


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_leaves_no_process_behind(tmp_path, data_dir, signum):
    runtime = tmp_path / "run"
    up = UpProcess(data_dir, clean_env(runtime))
    try:
        up.wait_for("TMS is up")
        up.wait_for("deltacommit")  # the demo writer runs
        started = descendants(up.process.pid)
        roles = [cmd for pid, cmd in ((p, c) for p, c in processes_naming("tms.cli")) if pid in started]
        assert {cmd.split()[-1] for cmd in roles} >= {"serve", "planner", "worker"}, roles
        assert processes_naming(str(data_dir / "postgres")), "the embedded PostgreSQL runs"
        up.process.send_signal(signum)
        assert up.wait(timeout=90) == 0, up.output
    finally:
        up.kill()
    _nothing_left(started, data_dir)
    assert not list(runtime.glob("instance-*.json")), "the instance record is removed"


@pytest.mark.slow
@pytest.mark.waiting
@pytest.mark.beside
def test_tokens_from_anywhere_kept_secrets_and_restarted_roles(tmp_path, data_dir):
    runtime, elsewhere, lake = tmp_path / "run", tmp_path / "elsewhere", tmp_path / "lake"
    elsewhere.mkdir()
    lake.mkdir()
    outside = unzip_fixture("cow_v8_nonpartitioned", lake)  # a table under the user's storage root
    env = clean_env(runtime)

    none = _tokens_create(elsewhere, env)  # no `tms up` runs: nothing is created
    assert (none.returncode, none.stdout) == (1, "") and none.stderr.startswith("error: found no TMS database"), \
        none.stderr
    assert len(none.stderr.splitlines()) == 1 and not (elsewhere / ".tms").exists()

    up = UpProcess(data_dir, {**env, "TMS_STORAGE_ROOTS": str(lake)})
    try:
        admin = up.wait_for("admin token: ").split()[2]
        callback_key = up.wait_for("callback key: ").split()[2]
        assert (data_dir / "admin-token").read_text().strip() == admin
        made = _tokens_create(elsewhere, env)
        assert made.returncode == 0, made.stderr
        assert f"using the TMS running from {data_dir.resolve()}" in made.stderr
        token = made.stdout.strip()
        tables = httpx.get(f"{up.url}/api/v1/tables", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert tables.status_code == 200 and tables.json()["total"] == 1
        assert not (elsewhere / ".tms").exists()

        status = subprocess.run([sys.executable, "-m", "tms.cli", "status", "--json"], cwd=elsewhere,
                                capture_output=True, text=True, timeout=120,
                                env={**env, "TMS_URL": up.url, "TMS_TOKEN": admin})
        assert status.returncode == 0, status.stderr

        # The banner's ops command, run as printed from another directory, by a shell without the venv's PATH.
        printed = up.wait_for("ops commands: ").removeprefix("ops commands: ")
        assert printed.endswith(" status") and "<" not in printed, printed
        banner = subprocess.run(["bash", "-c", printed], cwd=elsewhere, capture_output=True, text=True,
                                timeout=120, env={**env, "PATH": "/usr/bin:/bin"})
        assert banner.returncode == 0 and "open alerts:" in banner.stdout, banner.stdout + banner.stderr

        # TMS_STORAGE_ROOTS set by the user is honoured, the data directory's tables folder added to it.
        assert up.wait_for("tables may be registered under: ") == \
            f"tables may be registered under: {lake}, {data_dir.resolve() / 'tables'} " \
            "(TMS_STORAGE_ROOTS, and the data directory's)"
        registered = httpx.post(f"{up.url}/api/v1/tables", json={"base_path": str(outside)},
                                headers={"Authorization": f"Bearer {admin}"}, timeout=60)
        assert registered.status_code == 201, registered.text

        # A role killed outright is started again.
        [(planner, _)] = [(pid, cmd) for pid, cmd in processes_naming("tms.cli planner")
                          if pid in descendants(up.process.pid)]
        subprocess.run(["kill", "-9", str(planner)], check=True)
        up.wait_for("the planner role exited with status -9; restarting it in 1 s")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            again = [pid for pid, _ in processes_naming("tms.cli planner") if pid in descendants(up.process.pid)]
            if again and again != [planner]:
                break
            time.sleep(0.5)
        assert again and planner not in again, "the planner runs again"
        up.process.send_signal(signal.SIGINT)
        assert up.wait(timeout=90) == 0, up.output
    finally:
        up.kill()

    second = UpProcess(data_dir, env)  # a restart: the same secrets
    try:
        assert second.wait_for("admin token: ").split()[2] == admin
        assert second.wait_for("callback key: ").split()[2] == callback_key
        second.process.send_signal(signal.SIGTERM)
        assert second.wait(timeout=90) == 0, second.output
    finally:
        second.kill()
