"""What TMS can do for a table: reading and each table service, or why not in one line. A table TMS cannot
read exactly is never read with exit 0 (ORC, HFile, unknown base formats, CUSTOM merge mode, partial merges, bootstrap
tables, dropped partition columns, virtual keys on MERGE_ON_READ), and `tms schedule` writes nothing on a
table it cannot serve."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import FIXTURE_TABLES
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.errors import UnsupportedTableError
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import format_properties
from tms.planning.capabilities import SERVICES, Capability, capabilities, unrunnable_plans

# Fixtures whose metadata table TMS cannot keep in sync: its statistics are read from Parquet base files.
WITH_UNMAINTAINABLE_METADATA_TABLE = {"cow_v9_lance_nonpartitioned"}
runner = CliRunner()


def _copy(fixture_tables, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fixture_tables[name], tmp_path / name))


def _set(path: Path, changes: dict[str, str | None]) -> None:
    props = HudiTable.load(str(path)).config.props
    props = {k: v for k, v in {**props, **changes}.items() if v is not None}
    (path / ".hoodie" / "hoodie.properties").write_text(format_properties(props))


def _timeline_files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in (path / ".hoodie").rglob("*") if p.is_file())


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLES))
def test_every_fixture_is_readable_and_serviceable_unless_its_metadata_table_cannot_be_kept(fixture_tables, name):
    table = HudiTable.load(str(fixture_tables[name]))
    caps = capabilities(table)
    assert set(caps) == set(SERVICES)
    assert caps["reading"] == Capability(True, "")
    for service in ("compaction", "clustering", "clean", "rollback"):
        can_run, reason, engine = caps[service]
        assert engine == ""  # no Hudi engine runs the table's tasks
        if service == "compaction" and name.startswith("cow_"):
            assert not can_run and reason.startswith("compaction applies to MERGE_ON_READ tables")
        elif name in WITH_UNMAINTAINABLE_METADATA_TABLE:
            assert not can_run
            assert "metadata table" in reason and "files" in reason  # names the partitions
        else:
            assert (can_run, reason) == (True, "")


# property changes that make a (copy of a) fixture unreadable, and a word the one line must hold
UNREADABLE = {
    "orc": ("cow_v6_nonpartitioned", {"hoodie.table.base.file.format": "ORC"}, "ORC"),
    "hfile": ("cow_v8_nonpartitioned", {"hoodie.table.base.file.format": "HFILE"}, "HFILE"),
    "unknown_format": ("mor_v6_trips_8i1u", {"hoodie.table.base.file.format": "AVRO"}, "AVRO"),
    "custom_merge": ("mor_v8_trips_8i3u1d", {"hoodie.record.merge.mode": "CUSTOM"}, "CUSTOM"),
    "custom_payload": ("mor_v6_trips_8i1u", {"hoodie.compaction.payload.class": "com.acme.MyPayload"}, "CUSTOM"),
    # a partial payload on table version 8 (Hudi 1.0's payload merge, which TMS does not follow)
    "overwrite_non_defaults_v8": ("mor_v8_trips_8i3u1d", {"hoodie.compaction.payload.class":
                                  "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"},
                                  "OverwriteNonDefaultsWithLatestAvroPayload"),
    # Hudi 1.1's PostgresDebeziumAvroPayload, as its table configuration says it, without its unavailable value
    "partial_update_mode": ("mor_v9_txns_simple_meta", {"hoodie.table.partial.update.mode": "FILL_UNAVAILABLE"},
                            "FILL_UNAVAILABLE"),
    "bootstrap": ("cow_v6_nonpartitioned", {"hoodie.bootstrap.base.path": "/data/source"}, "bootstrap"),
    "dropped_partition_columns": ("mor_v6_trips_8i1u", {"hoodie.datasource.write.drop.partition.columns": "true"},
                                  "partition columns"),
    # Hudi 0.15 merges the logs of virtual-key tables by one record key field only
    "virtual_keys_mor": ("cow_v6_simplekeygen_hivestyle_no_metafields", {"hoodie.table.type": "MERGE_ON_READ",
                         "hoodie.table.recordkey.fields": "id,name"}, "virtual keys"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_unreadable_table_is_refused_with_one_line(fixture_tables, tmp_path, case):
    name, changes, word = UNREADABLE[case]
    path = _copy(fixture_tables, name, tmp_path)
    _set(path, changes)
    table = HudiTable.load(str(path))
    assert not capabilities(table)["reading"].can_run
    with pytest.raises(UnsupportedTableError, match=word):
        read_snapshot(table)
    result = runner.invoke(app, ["read", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: TMS cannot read table {table.name}: ") and word in line


def test_a_base_file_of_another_format_is_refused_not_skipped(fixture_tables, tmp_path):
    """A Parquet table holding an ORC base file: the file is seen (not skipped as an unknown name) and the
    read refused, before any row is printed."""
    path = _copy(fixture_tables, "mor_v6_trips_8i1u", tmp_path)
    victim = next(p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts)
    victim.rename(victim.with_suffix(".orc"))
    result = runner.invoke(app, ["read", str(path)])
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert "ORC" in line and victim.with_suffix(".orc").name in line


@pytest.mark.parametrize("action", ["compaction", "clustering", "clean", "rollback"])
def test_schedule_writes_nothing_on_a_table_whose_metadata_table_cannot_be_kept(fixture_tables, tmp_path, action):
    """An index partition still being built (inflight) would miss what TMS writes meanwhile."""
    path = _copy(fixture_tables, "mor_v8_trips_8i3u1d", tmp_path)
    _set(path, {"hoodie.table.metadata.partitions.inflight": "expr_index_price"})
    before = _timeline_files(path)
    result = runner.invoke(app, ["schedule", str(path), "--service", action])
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"TMS cannot run {action} on table" in line and "expr_index_price" in line
    assert _timeline_files(path) == before


@pytest.mark.parametrize("action", ["compaction", "clustering"])
def test_schedule_writes_nothing_on_a_custom_merge_table(fixture_tables, tmp_path, action):
    path = _copy(fixture_tables, "mor_v6_trips_8i1u", tmp_path)
    _set(path, {"hoodie.compaction.payload.class": "com.acme.MyPayload"})
    before = _timeline_files(path)
    result = runner.invoke(app, ["schedule", str(path), "--service", action, "--option",
                                 "hoodie.compact.inline.max.delta.commits=1"])
    assert result.exit_code == 1 and "CUSTOM" in result.stderr
    assert _timeline_files(path) == before


def test_the_metadata_table_writer_decides_which_partitions_block_a_service(fixture_tables, monkeypatch):
    """The hook the metadata-table writer fills: partitions it cannot maintain for a service."""
    import tms.planning.capabilities as caps_module
    table = HudiTable.load(str(fixture_tables["mor_v8_trips_8i3u1d"]))
    monkeypatch.setattr(caps_module, "unmaintainable_partitions",
                        lambda t, service: ["secondary_index_idx_rider"] if service == "clustering" else [])
    caps = capabilities(table)
    assert caps["compaction"] == Capability(True, "") and caps["clean"].can_run
    assert not caps["clustering"].can_run and "secondary_index_idx_rider" in caps["clustering"].reason


def test_plans_that_can_no_longer_run_are_named(fixture_tables, tmp_path):
    """A compaction planned while the table was serviceable, then the writers turned the metadata table on:
    the plan is one TMS can no longer run (the planner rolls such plans back, with an alert)."""
    path = _copy(fixture_tables, "mor_v6_trips_8i1u", tmp_path)
    result = runner.invoke(app, ["schedule", str(path), "--service", "compaction", "--option",
                                 "hoodie.compact.inline.max.delta.commits=1"])
    assert result.exit_code == 0, result.output
    planned = result.stdout.split()[0]
    assert unrunnable_plans(HudiTable.load(str(path))) == []
    _set(path, {"hoodie.table.metadata.partitions": "files,expr_index_price"})
    [(instant, reason)] = unrunnable_plans(HudiTable.load(str(path)))
    assert (instant.timestamp, instant.action) == (planned, "compaction")
    assert "expr_index_price" in reason
    # and its executor refuses it before it starts
    from tms.execute.dispatch import execute_instant
    from tms.execute.runner import LocalRunner
    with pytest.raises(UnsupportedTableError):
        execute_instant(HudiTable.load(str(path)), planned, LocalRunner(1))
    assert HudiTable.load(str(path)).timeline.get(planned).state.name == "REQUESTED"
