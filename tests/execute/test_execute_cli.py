"""`tms execute`: through a real spark-submit, in process with --local, a job SIGKILLed mid-write and its
retry, and the refusals that change nothing. (A job on a standalone cluster: the worker's,
tests/worker/test_worker_end_to_end.py.)"""
import os
import signal
import subprocess
import time

import pytest
from execute_support import ModelledTable, plan_compaction, rec, write_history
from typer.testing import CliRunner

from tms.cli import app
from tms.config import load_settings
from tms.execute.spark_submit import (
    build_py_files,
    executor_settings_conf,
    spark_submit_command,
    spark_submit_env,
    warm_engine_command,
)
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.timeline.instant import State
from tms.timeline_zone import LOCAL_TIMEZONE_ENV


@pytest.fixture(scope="module")
def tms():
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_execute_through_spark_submit(tmp_path, tms):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    write_history(t)
    tc = plan_compaction(t.table())

    result = tms("execute", t.path, "--instant", tc, "--master", "local[2]", "--conf", "spark.ui.enabled=false")

    assert result.exit_code == 0, result.output
    assert t.table().timeline.get(tc).is_completed
    t.check()


@pytest.mark.slow
def test_job_killed_mid_write_leaves_the_table_readable_and_the_retry_completes(tmp_path, tms):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6, max_file_records=20)
    t.write([rec(i, 10) for i in range(1200)], "insert")  # 60 file groups
    t.write([rec(i, 20) for i in range(0, 1200, 2)])
    tc = plan_compaction(t.table())
    markers = t.path / ".hoodie" / ".temp" / tc
    cmd = spark_submit_command(str(t.path), tc, py_files=build_py_files(tmp_path), master="local[1]",
                               conf={"spark.ui.enabled": "false"})
    job = subprocess.Popen(cmd, env=spark_submit_env("local[1]"), start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (markers.exists() and any(markers.rglob("*.marker.*"))):
            assert job.poll() is None and time.monotonic() < deadline, "the job ended before writing"
            time.sleep(0.01)
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # spark-submit, its JVM, the Python driver and workers
        job.wait()

    assert t.table().timeline.get(tc).state is State.INFLIGHT, "killed mid-write"
    t.check()

    result = tms("execute", t.path, "--instant", tc, "--local")
    assert result.exit_code == 1 and "inflight" in result.output
    result = tms("execute", t.path, "--instant", tc, "--local", "--retry")
    assert result.exit_code == 0, result.output

    table = t.table()
    assert table.timeline.get(tc).is_completed
    written = {s.path for s in table.timeline.commit_metadata(table.timeline.get(tc)).write_stats()}
    on_disk = {p.relative_to(t.path).as_posix() for p in t.path.rglob("*.parquet")
               if BaseFileName.parse(p.name).instant == tc}
    assert on_disk == written, "no file of the killed attempt is left"
    t.check()


def test_jobs_read_local_timelines_in_the_configured_zone(tmp_path, monkeypatch):
    """The driver loads TMS_TIMELINE_LOCAL_TIMEZONE with its settings; executors on a cluster get it through
    spark.executorEnv, from the settings of the process that submits the job."""
    def command(settings):
        return spark_submit_command("/t", "20250101000000000", py_files=tmp_path / "tms-jobs.zip",
                                    master="spark://h:7077", spark_submit="spark-submit",
                                    settings_conf=executor_settings_conf(settings))
    monkeypatch.delenv(LOCAL_TIMEZONE_ENV, raising=False)
    assert f"spark.executorEnv.{LOCAL_TIMEZONE_ENV}=Asia/Shanghai" in command(
        load_settings(timeline_local_timezone="Asia/Shanghai"))
    assert not [arg for arg in command(load_settings()) if LOCAL_TIMEZONE_ENV in arg]


def test_a_job_attempts_a_failed_part_as_often_as_the_settings_say(tmp_path):
    """spark.task.maxFailures from TMS_WORKER_TASK_MAX_FAILURES; a local master, which ignores it, takes it as
    local[N,F]; an engine's or queue's own conf wins; warm engines too."""
    def master(of: str, **overrides) -> tuple[str, str]:
        cmd = spark_submit_command("/t", "20250101000000000", py_files=tmp_path / "tms-jobs.zip", master=of,
                                   spark_submit="spark-submit", conf=overrides.get("conf"),
                                   settings_conf=executor_settings_conf(load_settings(**overrides.get("s", {}))))
        return cmd[cmd.index("--master") + 1], next(a for a in cmd if a.startswith("spark.task.maxFailures="))
    assert master("local[*]") == ("local[*,4]", "spark.task.maxFailures=4")
    assert master("local", s={"worker_task_max_failures": 2}) == ("local[1,2]", "spark.task.maxFailures=2")
    assert master("local[3]", conf={"spark.task.maxFailures": "7"}) == ("local[3,7]", "spark.task.maxFailures=7")
    assert master("local[2,5]") == ("local[2,5]", "spark.task.maxFailures=4"), "a master's own count is kept"
    assert master("yarn") == ("yarn", "spark.task.maxFailures=4")
    warm = warm_engine_command(tmp_path / "s", py_files=tmp_path / "z", master="local[2]", conf={}, name="w",
                               settings_conf=executor_settings_conf(load_settings()))
    assert warm[warm.index("--master") + 1] == "local[2,4]"


def test_refusals_change_nothing(tmp_path, tms):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    t.write([rec(i, 10) for i in range(9)], "insert")
    t.write([rec(i, 20) for i in range(3)])
    pending = t.write([rec(1, 30)], leave_inflight=True)
    tc = plan_compaction(t.table())

    result = tms("execute", t.path, "--instant", tc)
    assert result.exit_code == 1 and f"held by writes still pending before it: {pending}" in result.output
    result = tms("execute", t.path, "--instant", "20990101000000000", "--local")
    assert result.exit_code == 1 and "no instant 20990101000000000" in result.output
    result = tms("execute", t.path, "--instant", "yesterday")
    assert result.exit_code == 1 and "not an instant time" in result.output
    result = tms("execute", t.path, "--instant", pending, "--local")
    assert result.exit_code == 1 and "not a plan TMS executes" in result.output
    result = tms("execute", t.path, "--instant", tc, "--conf", "novalue")
    assert result.exit_code == 1 and "key=value" in result.output
    result = tms("execute", t.path, "--instant", tc, "--local", "--option", "hoodie.memory.compaction.max.size=lots")
    assert result.exit_code == 1 and "hoodie.memory.compaction.max.size=lots is not a number of bytes" in result.output
    assert set(t.table().timeline.states_of(tc)) == {State.REQUESTED}

    t.writer.complete(pending)
    t.model.upsert([rec(1, 30)])
    result = tms("execute", t.path, "--instant", tc, "--local", "--option", "hoodie.memory.compaction.max.size=1")
    assert result.exit_code == 0 and "completed as commit" in result.output  # within the smallest budget
    assert result.exit_code == 0 and "completed as commit" in result.output
    result = tms("execute", t.path, "--instant", tc, "--local")
    assert result.exit_code == 1 and "already completed" in result.output
    t.check()
