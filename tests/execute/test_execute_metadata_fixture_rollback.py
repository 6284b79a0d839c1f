"""The rollback of a failed write through TMS on every fixture with a metadata table (the issue's proof: "on
every fixture with a metadata table ... the rollback of a failed write"): TMS's rollback planner and executor
undo the write on the data table and on the MDT, hudi-rs reads the rows as before, `tms verify` finds
nothing, and the table without its MDT reads the same.

The failed write is made by TMS's writer, which cannot keep the fixtures' secondary indexes: it writes while
they are left out of hoodie.properties (its MDT delta commit covers the other partitions, as a crashed
writer's partial sync would), and the properties are restored before TMS rolls it back."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mdt_model import MDT_FIXTURES, unzip_mdt_fixture, without_metadata_table
from support import hudi_rs_table, rows

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import format_properties
from tms.hudi.table.verify import verify_table
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.instant import State
from tms.planning.rollback import plan_rollback

PARTITIONS = "hoodie.table.metadata.partitions"
PARQUET_FIXTURES = sorted(n for n in MDT_FIXTURES if "lance" not in n)  # Lance: refused (test_capabilities)


def _rows(path: Path) -> list[dict]:
    t = hudi_rs_table(path)
    return rows(t, [c for c in t.column_names if c != "_hoodie_file_name"])  # commit times included


def _crashed_write(path: Path) -> str:
    """Upsert three of the table's rows and stop before completing, as a crashed writer does."""
    props_file = path / ".hoodie" / "hoodie.properties"
    original = props_file.read_text()
    props = dict(HudiTable.load(str(path)).config.props)
    props[PARTITIONS] = ",".join(p for p in props[PARTITIONS].split(",") if not p.startswith("secondary_index_"))
    props_file.write_text(format_properties(props))
    try:
        data = hudi_rs_table(path)
        some = data.select([c for c in data.column_names if not c.startswith("_hoodie_")]).slice(0, 3)
        return HudiWriter(HudiTable.load(str(path))).write(some, "upsert", leave_inflight=True).instant
    finally:
        props_file.write_text(original)


@pytest.mark.parametrize("name", PARQUET_FIXTURES)
def test_rollback_of_a_failed_write_on_a_fixture_keeps_the_mdt_in_sync(tmp_path, name):
    path = Path(shutil.copytree(unzip_mdt_fixture(name, tmp_path / "src"), tmp_path / name))
    before = _rows(path)
    crashed = _crashed_write(path)
    mdt = lambda ts: MetadataTable(HudiTable.load(str(path))).table.timeline.states_of(ts)  # noqa: E731
    assert State.COMPLETED in mdt(crashed), "the crashed writer had synced its MDT"

    planned = plan_rollback(HudiTable.load(str(path)), crashed)
    assert planned is not None
    execute_instant(HudiTable.load(str(path)), planned.instant, LocalRunner(1))

    table = HudiTable.load(str(path))
    assert table.timeline.get(crashed) is None and table.timeline.get(planned.instant).is_completed
    assert not mdt(crashed), "the MDT side of the failed write is undone"
    assert State.COMPLETED in mdt(planned.instant)
    assert _rows(path) == before
    assert verify_table(table) == []
    bare = without_metadata_table(path, tmp_path / f"{name}-bare")
    assert _rows(bare) == before
