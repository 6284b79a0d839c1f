"""Every Java-written fixture table that can be compacted, clustered or cleaned is, on Spark, and hudi-rs
reads the same rows before and after. The v8 MOR fixture's metadata table is dropped from the copy first:
TMS refuses tables with one (test_jobs_compaction), since hudi-rs and Java list files through it."""
import pytest
from execute_support import copy_fixture, plan_clean_of_old_versions, plan_clustering, plan_compaction
from support import FIXTURE_TABLES, hudi_rs_table, rows

from tms.execute.dispatch import execute_instant
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable

# The v9 MOR fixtures end with a compaction: no latest slice has log files, nothing to compact (writer-made v9
# tables are compacted in test_jobs_layouts).
FULLY_COMPACTED = {"mor_v9_txns_simple_meta", "mor_v9_txns_simple_nometa"}
MOR = sorted(name for name in FIXTURE_TABLES if name.startswith("mor_") and name not in FULLY_COMPACTED)
PLANS = {"compaction": plan_compaction, "clustering": plan_clustering,
         "clean": lambda table: plan_clean_of_old_versions(table)[0]}


def _rows(table) -> list[dict]:
    """Whole rows but the file name, which compaction and clustering rewrite."""
    return rows(table, [c for c in table.column_names if c != "_hoodie_file_name"])


@pytest.mark.parametrize("action,name", [("compaction", name) for name in MOR]
                         + [(action, name) for action in ("clustering", "clean") for name in sorted(FIXTURE_TABLES)])
def test_fixture_tables_read_the_same_after_each_table_service(tmp_path, fixture_tables, spark_runner, action, name):
    path = copy_fixture(fixture_tables, name, tmp_path, drop_metadata_table=True)
    before = _rows(hudi_rs_table(path))
    instant = PLANS[action](HudiTable.load(str(path)))

    execute_instant(HudiTable.load(str(path)), instant, spark_runner)

    table = HudiTable.load(str(path))
    assert table.timeline.get(instant).is_completed
    assert _rows(hudi_rs_table(path)) == before
    assert _rows(read_snapshot(table)) == before
    if action == "compaction":
        slices = table.file_system_view().latest_slices()
        assert any(fs.base_instant == instant for fs in slices)
        assert all(not fs.log_files for fs in slices if fs.base_instant == instant)


@pytest.mark.parametrize("name", sorted(FULLY_COMPACTED))
def test_fully_compacted_fixtures_have_no_log_files(fixture_tables, name):
    slices = HudiTable.load(str(fixture_tables[name])).file_system_view().latest_slices()
    assert slices and not any(fs.log_files for fs in slices)
