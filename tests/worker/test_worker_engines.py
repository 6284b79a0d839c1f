"""Which engine a claimed task runs on (the most specific rollout rule; a canary share fixed per task; a retry
after a canary failure on the stable engine) and the job command of an engine (its code first on the path,
its spark-submit, its confs under the queue's and the sizing's)."""
from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from worker_support import ModelledTable, final_attempt, plan, register, wait_until_final, write_history

from tms.db import EngineRepo, RolloutRepo, TableRepo, TaskRepo, TaskState
from tms.execute.engine_code import EngineSpec
from tms.execute.spark_submit import spark_home
from worker.claim import ClaimLimits, claim_next
from worker.commands import hudi_job, python_job, spark_job
from worker.engine_choice import choose_engine, in_canary, matching_rule

JOBS = Path(__file__).resolve().parents[2] / "jobs"
LIMITS = ClaimLimits(lease_seconds=60, driver_memory_mb=512, driver_cores=1, max_executors_per_table=4)


def _rule(name, queue=None, database=None, table_name=None):
    return SimpleNamespace(name=name, queue=queue, database=database, table_name=table_name)


def test_the_most_specific_rule_wins_table_over_database_over_queue_over_every_task():
    rules = [_rule("all"), _rule("q", queue="local"), _rule("db", database="sales"),
             _rule("t", database="sales", table_name="sales.orders")]
    assert matching_rule(rules, queue="local", database="sales", table="orders").name == "t"
    assert matching_rule(rules, queue="local", database="sales", table="items").name == "db"
    assert matching_rule(rules, queue="local", database="hr", table="people").name == "q"
    assert matching_rule(rules, queue="big", database="hr", table="people").name == "all"
    assert matching_rule(rules[1:3], queue="big", database="hr", table="people") is None


def test_the_canary_share_is_fixed_per_task_and_near_its_percentage():
    share = sum(in_canary("upgrade", task_id, 20) for task_id in range(1, 10_001)) / 10_000
    assert 0.18 < share < 0.22
    assert [in_canary("upgrade", t, 20) for t in range(50)] == [in_canary("upgrade", t, 20) for t in range(50)]
    assert not any(in_canary("upgrade", t, 0) for t in range(1000))
    assert all(in_canary("upgrade", t, 100) for t in range(1000))


@pytest.fixture
def engines(db, tmp_path):
    for name in ("v1", "v2"):
        (tmp_path / name / "jobs").mkdir(parents=True)
        (tmp_path / name / "jobs" / "run.py").write_text("")
        with db.transaction() as session:
            EngineRepo(session).put(name, code_version=name, code_path=str(tmp_path / name),
                                    spark_conf={"spark.engine": name})


def test_a_claim_records_the_chosen_engine_and_a_retry_after_a_canary_failure_runs_on_stable(
        tmp_path, service, db, local_queue, engines):
    local_queue()
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    with db.transaction() as session:
        RolloutRepo(session).put("everything", stable_engine="v1", canary_engine="v2", canary_percent=100,
                                 failure_margin=0.2, min_tasks=5)
    claimed = claim_next(db, "w1", LIMITS)
    assert claimed is not None and claimed.engine is not None and claimed.engine.name == "v2"
    with db.transaction() as session:
        tasks = TaskRepo(session)
        [attempt] = tasks.attempts(task_id)
        assert (attempt.engine, attempt.rollout) == ("v2", "everything")
        tasks.finish(task_id, fencing_token=claimed.fencing_token, succeeded=False, error="boom")
        failed = tasks.get(task_id)
        tasks.retry(failed)
    again = claim_next(db, "w1", LIMITS)
    assert again is not None and again.engine is not None and again.engine.name == "v1"
    with db.transaction() as session:
        assert [(a.engine, a.outcome) for a in TaskRepo(session).attempts(task_id)] == \
            [("v2", "FAILED"), ("v1", "RUNNING")]
        # A table-specific rule without a canary takes over from the rule for every task.
        table = TableRepo(session).get(table_id)
        RolloutRepo(session).put("this-table", table_name=f"{table.database}.{table.name}", stable_engine="v2",
                                 canary_engine=None, canary_percent=0, failure_margin=0.2, min_tasks=5)
        choice = choose_engine(session, task_id=task_id, table=table, queue="local", service="compaction")
        assert choice is not None and (choice.engine.name, choice.rollout, choice.canary) == ("v2", "this-table",
                                                                                             False)


def _claimed(engine: EngineSpec | None, **queue_conf):
    resources = SimpleNamespace(spark_conf=lambda kind: {"spark.executor.memory": "512m"})
    return SimpleNamespace(base_path="/data/t", instant="20250101000000000", service="compaction", master="local[1]",
                           queue_kind="local", queue_spark_conf=queue_conf, resources=resources, engine=engine,
                           concurrency_options={}, job_options={})


def test_a_python_job_on_an_engine_imports_the_engines_code_first(tmp_path):
    engine = EngineSpec(name="v2", code_path=str(tmp_path / "v2"))
    command, env = python_job(_claimed(engine), fence_url="http://f")  # type: ignore[arg-type]
    assert command[:4] == [sys.executable, "-P", "-m", "jobs.python_job"]
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "v2")
    builtin, _ = python_job(_claimed(None), fence_url="http://f")  # type: ignore[arg-type]
    assert builtin[:3] == [sys.executable, "-m", "jobs.python_job"]


def test_a_spark_job_on_an_engine_ships_its_code_with_its_spark_submit_and_confs(tmp_path):
    code = tmp_path / "v2"
    (code / "jobs").mkdir(parents=True)
    (code / "jobs" / "run.py").write_text("# job code v2\n")
    (code / "jobs" / "__init__.py").write_text("")
    submit = tmp_path / "spark-3.5" / "bin" / "spark-submit"
    engine = EngineSpec(name="v2", code_path=str(code), spark_submit=str(submit),
                        spark_conf={"spark.sql.shuffle.partitions": "4", "spark.yarn.queue": "engine"},
                        version_key="1")
    command, env = spark_job(_claimed(engine, **{"spark.yarn.queue": "q"}),  # type: ignore[arg-type]
                             py_files=tmp_path / "builtin.zip", fence_url="http://f", engine_cache=tmp_path / "cache")
    assert command[0] == str(submit) and env["SPARK_HOME"] == str(tmp_path / "spark-3.5")
    confs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    assert "spark.sql.shuffle.partitions=4" in confs and "spark.yarn.queue=q" in confs
    assert "spark.yarn.queue=engine" not in confs and "spark.executor.memory=512m" in confs
    py_files = command[command.index("--py-files") + 1]
    entry = command[command.index("--table") - 1]
    assert open(entry).read() == "# job code v2\n"
    with zipfile.ZipFile(py_files) as zf:
        names = zf.namelist()
        assert zf.read("jobs/run.py") == b"# job code v2\n"
        assert "tms/__init__.py" in names and "jobs/python_job.py" not in names


@pytest.mark.slow
def test_a_compaction_runs_on_spark_with_an_engines_own_code_and_spark_submit(tmp_path, service, db, local_queue,
                                                                              start_worker):
    code = tmp_path / "code-1.1"
    shutil.copytree(JOBS, code / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    run = code / "jobs" / "run.py"
    run.write_text(run.read_text().replace("result_line(result)", "result_line(result, job_code='1.1')"))
    response = httpx.put(f"{service.url}/api/v1/engines/spark-1.1", headers=service.admin, timeout=30, json={
        "spark_home": str(spark_home()), "code_version": "1.1", "code_path": str(code),
        "spark_conf": {"spark.tms.engine": "1.1"}})
    assert response.status_code == 200, response.text
    with db.transaction() as session:
        RolloutRepo(session).put("spark", stable_engine="spark-1.1", canary_engine=None, canary_percent=0,
                                 failure_margin=0.2, min_tasks=5)
    local_queue(master="local[1]")
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    start_worker(worker_runner="spark")
    done = wait_until_final(db, task_id, timeout=180)
    attempt = final_attempt(db, task_id)
    assert done.state == TaskState.SUCCEEDED, attempt.log_tail
    assert (attempt.engine, attempt.rollout) == ("spark-1.1", "spark")
    assert attempt.result["instant"] == done.instant and attempt.result["action"] == "compaction"
    assert attempt.result["job_code"] == "1.1", "the engine's own job code ran"
    assert attempt.spark_app_id is not None
    t.check()


def test_a_tables_rule_naming_a_hudi_engine_runs_its_task_as_hudis_procedure_sized_and_fenced(
        tmp_path, service, db, local_queue):
    local_queue()
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    write_history(t)
    [task_id] = plan(db, table_id, "compaction")
    submit = tmp_path / "spark-3.5" / "bin" / "spark-submit"
    with db.transaction() as session:
        EngineRepo(session).put("hudi", kind="hudi", code_version="hudi-1.0.2", code_path="",
                                spark_submit=str(submit), spark_conf={"spark.jars": "/opt/hudi-bundle.jar"})
        table = TableRepo(session).get(table_id)
        RolloutRepo(session).put("legacy", table_name=f"{table.database}.{table.name}", stable_engine="hudi",
                                 canary_engine=None, canary_percent=0, failure_margin=0.2, min_tasks=5)
    claimed = claim_next(db, "w1", LIMITS)
    assert claimed is not None and claimed.task_id == task_id
    assert claimed.engine is not None and (claimed.engine.name, claimed.engine.kind) == ("hudi", "hudi")
    command, env = hudi_job(claimed, fence_url="http://fence/1")
    assert command[0] == str(submit) and command[command.index("--action") + 1] == "compaction"
    assert command[command.index("--instant") + 1] == claimed.instant
    assert command[command.index("--fence-url") + 1] == "http://fence/1"
    assert command[command.index("--table") - 1].endswith("jobs/hudi_procedures.py")
    confs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    assert "spark.jars=/opt/hudi-bundle.jar" in confs and "spark.driver.memory=512m" in confs
