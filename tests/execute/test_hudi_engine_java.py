"""A Hudi engine's job executes TMS's compaction plan: a MERGE_ON_READ table written by Java Hudi 1.0.2 (table
version 8) is planned by TMS's planner, and the job a Hudi engine runs (spark-submit of
jobs/hudi_procedures.py on the harness's Spark 3.5 with Hudi's bundle, as the worker launches it) completes
the instant; Java Hudi then reads the model's rows, snapshot and read-optimized, and writes on. Then a
clustering TMS plans, executed the same way."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hudi_java.harness import JavaWriter, trip_row, write_logs
from hudi_java.harness_env import VENV, ensure

from tms.execute.hudi_engine import hudi_job_command
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.capabilities import capabilities
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction
from tms.planning.policy import TablePolicy
from worker.job_process import JobProcess

pytestmark = [pytest.mark.slow, pytest.mark.beside, pytest.mark.timeout(1200)]
OPTIONS = {"hoodie.compact.inline": "false", "hoodie.compact.schedule.inline": "false",
           "hoodie.clean.automatic": "false", "hoodie.clustering.inline": "false",
           "hoodie.embed.timeline.server": "false", "hoodie.metadata.enable": "false",
           "hoodie.parquet.small.file.limit": "0"}  # each write's inserts make new small files: clustering's work



def test_hudi_engine_job_compacts_tms_plan(tmp_path, java_hudi):
    driver = java_hudi(8)
    _, bundles = ensure()
    path = tmp_path / "trips_hudi_engine_v8"
    writer = JavaWriter(driver, path, "MERGE_ON_READ", OPTIONS)
    write_logs(writer)
    planned = plan_compaction(HudiTable.load(str(path)), TablePolicy(), datetime.now(UTC), force=True)
    assert planned is not None, "TMS planned no compaction of a table with log files"

    _compact_and_judge(tmp_path, writer, planned.instant, bundles[8])
    writer.write("upsert", [trip_row(i, 4, "after") for i in (0, 5, 13)])
    assert writer.read("snapshot") == writer.expected(), "Java Hudi writes on after the Hudi engine's compaction"

    writer.write("insert", [trip_row(i, 5, "more") for i in range(20, 24)])
    clustering = plan_clustering(HudiTable.load(str(path)), TablePolicy(), datetime.now(UTC), force=True)
    assert clustering is not None, "TMS planned no clustering of a table of small files"
    _run_hudi_engine_job(tmp_path, path, clustering.instant, "clustering", bundles[8])
    instant = HudiTable.load(str(path)).timeline.get(clustering.instant)
    assert instant is not None and instant.is_completed, "the Hudi engine did not complete TMS's clustering plan"
    assert writer.read("snapshot") == writer.expected(), "Java Hudi's snapshot read after the Hudi engine's clustering"
    writer.write("upsert", [trip_row(i, 6, "last") for i in (2, 21)])
    assert writer.read("snapshot") == writer.expected(), "Java Hudi writes on after the Hudi engine's clustering"


def test_a_table_tms_cannot_merge_is_compacted_by_the_hudi_engine(tmp_path, java_hudi):
    """A payload class TMS does not implement (merge mode CUSTOM): TMS's own engine refuses the table, a Hudi
    engine running its tasks serves it; the plan is TMS's, the merge Hudi's, and Java reads the model."""
    driver = java_hudi(8)
    _, bundles = ensure()
    path = tmp_path / "trips_custom_payload_v8"
    writer = JavaWriter(driver, path, "MERGE_ON_READ", {
        **OPTIONS, "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.FirstValueAvroPayload"})
    write_logs(writer)  # each write a newer ts: the first value of an ordering value is the only one
    table = HudiTable.load(str(path))
    assert not capabilities(table)["compaction"].can_run
    assert "CUSTOM" in capabilities(table)["compaction"].reason
    on_hudi = capabilities(table, "hudi-1.0.2")["compaction"]
    assert on_hudi.can_run and on_hudi.engine == "hudi-1.0.2"
    planned = plan_compaction(table, TablePolicy(), datetime.now(UTC), force=True)
    assert planned is not None, "TMS planned no compaction of a table with log files"

    _compact_and_judge(tmp_path, writer, planned.instant, bundles[8])


def _compact_and_judge(tmp_path, writer: JavaWriter, instant: str, bundle) -> None:
    """The Hudi engine's job compacts TMS's plan at `instant`; Java Hudi then reads the model's rows."""
    _run_hudi_engine_job(tmp_path, writer.path, instant, "compaction", bundle)
    done = HudiTable.load(str(writer.path)).timeline.get(instant)
    assert done is not None and done.is_completed, "the Hudi engine did not complete TMS's plan"
    assert writer.read("snapshot") == writer.expected(), "Java Hudi's snapshot read after the Hudi engine's job"
    assert writer.read("read_optimized") == writer.expected(), "Java Hudi's read-optimized read"


def _run_hudi_engine_job(tmp_path, path, instant: str, service: str, bundle) -> None:
    """The job the worker launches for a hudi engine (worker.commands.hudi_job), on the harness's Spark 3.5."""
    command, env = hudi_job_command(
        spark_submit=str(VENV / "bin" / "spark-submit"), table_path=str(path), instant=instant, service=service,
        master="local[1]", conf={"spark.jars": str(bundle), "spark.driver.memory": "1g", "spark.ui.enabled": "false"},
        options={key: value for key, value in OPTIONS.items() if key.startswith("hoodie.metadata")})
    job = JobProcess(command, env, tmp_path / f"{service}.log")
    status = job.wait(900)
    if status is None:
        job.kill()
    assert status == 0, f"the Hudi engine's {service} job failed ({status}): {job.tail(3000)}"
