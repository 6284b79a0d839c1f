"""A Hudi engine's job refuses, with one line and before Spark starts, what it cannot do exactly: a service
Hudi's procedures cannot execute from TMS's plan, an engine without its own Spark or Hudi's bundle, and a lost
lease."""
from __future__ import annotations

import pytest

from jobs import hudi_procedures
from tms.errors import ConfigError
from tms.execute.hudi_engine import check_hudi_engine, hudi_job_command


def test_clean_is_refused_before_launch():
    with pytest.raises(ConfigError, match="cannot execute a TMS-planned clean"):
        hudi_job_command(spark_submit="/opt/spark/bin/spark-submit", table_path="/t", instant="20260101000000000",
                         service="clean", master="local[1]", conf={})
    assert hudi_procedures.main(["--table", "/t", "--instant", "1", "--action", "clean"]) == 2


def test_engine_needs_its_spark_and_hudi_bundle():
    with pytest.raises(ConfigError, match="its own spark_submit"):
        check_hudi_engine(None, {"spark.jars": "/hudi.jar"})
    with pytest.raises(ConfigError, match="Hudi's Spark bundle"):
        check_hudi_engine("/opt/spark/bin/spark-submit", {})
    check_hudi_engine("/opt/spark/bin/spark-submit", {"spark.jars.packages": "org.apache.hudi:x:1.0.2"})


def test_lost_lease_stops_the_job_before_hudi_starts(capsys):
    # Nothing listens on port 1 of loopback: the fence cannot confirm the lease.
    status = hudi_procedures.main(["--table", "/t", "--instant", "20260101000000000", "--action", "compaction",
                                   "--fence-url", "http://127.0.0.1:1/fence"])
    assert status == 3
    assert "lease on compaction 20260101000000000 is lost" in capsys.readouterr().out


def test_the_procedure_call_names_the_planned_instant():
    sql = hudi_procedures.statement("clustering", "/data/t", "20260101000000000", {"hoodie.write.lock.provider": "p"})
    assert sql == ("CALL run_clustering(op => 'execute', path => '/data/t', instants => '20260101000000000', "
                   "options => 'hoodie.write.lock.provider=p')")
