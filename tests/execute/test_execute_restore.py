"""Savepoints and the restore in place to one: after a bad overwrite, the table reads as it did at the
savepoint (TMS's reader, hudi-rs, the metadata table's listing), Hudi's restore instants are on the timeline,
and writers continue."""
import copy

import pytest
from execute_support import plan_compaction, rec
from mdt_model import MdtModelledTable

from tms.execute.dispatch import execute_instant
from tms.execute.restore import RestoreRefused, restore_in_place
from tms.execute.runner import LocalRunner
from tms.hudi.table.savepoint import create_savepoint, delete_savepoint, read_savepoint
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import parse_restore_metadata, parse_restore_plan


@pytest.mark.parametrize("table_type,version", [("COPY_ON_WRITE", 6), ("MERGE_ON_READ", 6), ("COPY_ON_WRITE", 8),
                                                ("MERGE_ON_READ", 8), ("MERGE_ON_READ", 9)])
def test_restore_in_place_to_savepoint(tmp_path, table_type, version):
    t = MdtModelledTable(tmp_path / "t", table_type, version)
    t.write([rec(i, 10) for i in range(12)], "insert")
    kept = t.write([rec(i, 20) for i in range(6)])
    at_savepoint = copy.deepcopy(t.model.rows)
    sp = create_savepoint(t.table(), comment="before the backfill")
    assert sp.timestamp == kept and (timeline_dir(t) / f"{kept}.savepoint.inflight").exists()
    files = read_savepoint(t.table(), kept).partition_metadata
    assert files and all(p.savepoint_data_file for p in files.values())

    bad = [t.write([rec(i, 99, "bad") for i in range(12)]), t.write([rec(i, 99) for i in range(3)], "delete")]
    if table_type == "MERGE_ON_READ":
        bad.append(execute_instant(t.table(), plan_compaction(t.table()), LocalRunner()).instant.timestamp)
    t.write([rec(40, 99, "late"), rec(1, 100, "late")])  # into the compacted slices too

    result = restore_in_place(t.table(), kept, LocalRunner())

    t.model.rows = at_savepoint
    t.check()
    table = t.table()
    tl = table.timeline
    assert [i.timestamp for i in tl.completed_writes()][-1] == kept
    assert not tl.pending()
    done = tl.get(result.instant.timestamp)
    assert done.is_completed and done.action == Action.RESTORE
    plan = parse_restore_plan(tl.read_plan(done.timestamp))
    assert plan.savepoint_to_restore_timestamp == kept
    undone = [i.commit_time for i in plan.instants_to_rollback]
    assert set(bad) < set(undone) and undone == sorted(undone, reverse=True)
    meta = parse_restore_metadata(tl.read(done))
    assert meta.instants_to_rollback == undone and set(meta.hoodie_restore_metadata) == set(undone)
    rollbacks = tl.completed((Action.ROLLBACK,))
    assert sorted(c for r in rollbacks for c in tl_rollback_targets(table, r)) == sorted(undone)
    assert [s.timestamp for s in tl.savepoints()] == [kept]

    t.write([rec(1, 50, "after")])  # writers continue
    t.check()


def timeline_dir(t):
    return t.path / t.table().config.timeline_dir


def tl_rollback_targets(table, inst):
    from tms.hudi.timeline.serde import parse_rollback_metadata
    return parse_rollback_metadata(table.timeline.read(inst)).commits_rollback


def test_restore_refuses_pending_write_and_newer_savepoint(tmp_path):
    t = MdtModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    first = t.write([rec(i, 10) for i in range(6)], "insert")
    create_savepoint(t.table(), first)
    second = t.write([rec(i, 20) for i in range(3)])
    create_savepoint(t.table(), second)

    with pytest.raises(RestoreRefused, match="savepoints newer than"):
        restore_in_place(t.table(), first, LocalRunner())
    delete_savepoint(t.table(), second)
    assert not [p for p in timeline_dir(t).iterdir() if p.name.startswith(f"{second}") and "savepoint" in p.name]
    pending = t.write([rec(i, 30) for i in range(3)], leave_inflight=True)
    with pytest.raises(RestoreRefused, match=f"writer's instant is pending.*{pending}"):
        restore_in_place(t.table(), first, LocalRunner())
    assert not [p for p in timeline_dir(t).iterdir() if "restore" in p.name]

    restore_in_place(t.table(), first, LocalRunner(), roll_back_pending_writes=True)
    t.forget(pending)
    t.model.rows.clear()
    t.model.upsert([rec(i, 10) for i in range(6)])
    t.check()


@pytest.mark.parametrize("table_type,version", [("MERGE_ON_READ", 6), ("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 9)])
def test_restore_savepoint_to_new_path(tmp_path, table_type, version):
    from support import hudi_rs_table, rows
    from table_model import COLUMNS

    from tms.execute.restore_copy import CopyRefused, restore_copy
    from tms.hudi.records.reader import read_snapshot
    from tms.hudi.table.hudi_table import HudiTable
    t = MdtModelledTable(tmp_path / "t", table_type, version)
    t.write([rec(i, 10) for i in range(12)], "insert")
    kept = t.write([rec(i, 20) for i in range(6)])
    expected = t.model.expected()
    create_savepoint(t.table())
    t.write([rec(i, 99, "bad") for i in range(12)])
    t.write([rec(i, 99) for i in range(3)], "delete")
    source_files = sorted(p.relative_to(t.path) for p in t.path.rglob("*") if p.is_file())

    result = restore_copy(t.table(), kept, str(tmp_path / "copy"), LocalRunner())

    copied = HudiTable.load(str(tmp_path / "copy"))
    assert rows(read_snapshot(copied), COLUMNS) == expected
    assert rows(hudi_rs_table(tmp_path / "copy"), COLUMNS) == expected
    assert copied.timeline.last_completed().timestamp <= kept and copied.timeline.savepoints()
    assert not (tmp_path / "copy" / ".hoodie" / "metadata").exists() and result.bytes_copied > 0
    t.check()  # the source is untouched
    assert sorted(p.relative_to(t.path) for p in t.path.rglob("*") if p.is_file()) == source_files
    with pytest.raises(CopyRefused, match="not empty"):
        restore_copy(t.table(), kept, str(tmp_path / "copy"), LocalRunner())


def test_savepoint_and_restore_commands(tmp_path):
    from support import hudi_rs_table, rows
    from table_model import COLUMNS
    from typer.testing import CliRunner

    from tms.cli import app
    t = MdtModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    kept = t.write([rec(i, 10) for i in range(6)], "insert")
    expected = t.model.expected()
    cli = CliRunner()
    made = cli.invoke(app, ["savepoint", str(t.path), "--comment", "nightly"])
    assert made.exit_code == 0 and f"savepoint {kept}" in made.output, made.output
    assert "nightly" in cli.invoke(app, ["savepoints", str(t.path)]).output
    t.write([rec(i, 99, "bad") for i in range(6)])
    copied = cli.invoke(app, ["restore-copy", str(t.path), "--savepoint", kept, "--target-path",
                              str(tmp_path / "copy")])
    assert copied.exit_code == 0, copied.output
    assert rows(hudi_rs_table(tmp_path / "copy"), COLUMNS) == expected
    restored = cli.invoke(app, ["restore-savepoint", str(t.path), "--savepoint", kept])
    assert restored.exit_code == 0 and "1 instant(s) rolled back" in restored.output, restored.output
    assert rows(hudi_rs_table(t.path), COLUMNS) == expected
    refused = cli.invoke(app, ["restore-savepoint", str(t.path), "--savepoint", "20200101000000000"])
    assert refused.exit_code != 0 and "no savepoint at 20200101000000000" in refused.output


def test_restore_refuses_a_table_with_an_index_tms_does_not_maintain(tmp_path):
    from tms.hudi.errors import UnsupportedTableError
    t = MdtModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    kept = t.write([rec(i, 10) for i in range(6)], "insert")
    create_savepoint(t.table())
    t.write([rec(i, 20) for i in range(3)])
    props = t.path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    partitions = next(line for line in text.splitlines() if line.startswith("hoodie.table.metadata.partitions="))
    props.write_text(text.replace(partitions, partitions + ",expr_index_price"))
    with pytest.raises(UnsupportedTableError, match="expr_index_price valid through a restore"):
        restore_in_place(t.table(), kept, LocalRunner())
    assert not [p for p in timeline_dir(t).iterdir() if "restore" in p.name or "rollback" in p.name]
