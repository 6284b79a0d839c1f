"""Java Hudi executes TMS's compaction plans. A MERGE_ON_READ table written by Java Hudi 1.0.2 (table version 8,
no metadata table, inline services off) is planned by TMS's planner; Hudi's own `run_compaction` executes the
plan TMS wrote (Hudi reads each operation's metrics: a plan without TOTAL_LOG_FILES_SIZE fails in its merge
handle), and Java Hudi then reads the model's rows, snapshot and read-optimized. The harness (tests/hudi_java)
is never skipped: a machine without it fails here with one line."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hudi_java.harness import JavaWriter, write_logs

from tms.hudi.table.hudi_table import HudiTable
from tms.planning.compaction import plan_compaction
from tms.planning.policy import TablePolicy

pytestmark = [pytest.mark.slow, pytest.mark.beside]
OPTIONS = {"hoodie.compact.inline": "false", "hoodie.compact.schedule.inline": "false",
           "hoodie.clean.automatic": "false", "hoodie.clustering.inline": "false",
           "hoodie.embed.timeline.server": "false", "hoodie.metadata.enable": "false"}



def test_tms_plans_java_compacts(tmp_path, java_hudi):
    driver = java_hudi(8)
    path = tmp_path / "trips_plan_v8"
    writer = JavaWriter(driver, path, "MERGE_ON_READ", OPTIONS)
    write_logs(writer)

    planned = plan_compaction(HudiTable.load(str(path)), TablePolicy(), datetime.now(UTC), force=True)
    assert planned is not None, "TMS planned no compaction of a table with log files"
    driver.call(op="sql", timeout=600,
                statement=f"CALL run_compaction(op => 'run', path => '{path}', timestamp => {planned.instant})")

    instant = HudiTable.load(str(path)).timeline.get(planned.instant)
    assert instant is not None and instant.is_completed, "Hudi's compaction did not complete TMS's plan"
    assert writer.read("snapshot") == writer.expected(), "Java Hudi's snapshot read after it compacted TMS's plan"
    # The compacted slices are base files only: the read-optimized view is the whole table.
    assert writer.read("read_optimized") == writer.expected(), "Java Hudi's read-optimized read"
