"""Table services on the new kinds of tables keep the rows hudi-rs reads: Lance base files (compaction and
clustering write Lance, never Parquet, into a Lance table), time-based key generators (partitions several
folder levels deep), URL-encoded and nested partition values, virtual keys, v9 tables made by the writer.
Executors run in-process; plans come from `tms schedule` where its policy makes one, else from execute_support."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from execute_support import copy_fixture, plan_clean_of_old_versions, plan_clustering, plan_compaction
from layout_tables import LAYOUTS, MODEL_COLUMNS, write_table
from support import hudi_rs_table, rows
from typer.testing import CliRunner

from tms.cli import app
from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.records.bloom import FOOTER_KEY
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.stats import plan_stats

runner = CliRunner()


def _rows(table) -> list[dict]:
    """Whole rows but the file name, which compaction and clustering rewrite."""
    return rows(table, [c for c in table.column_names if c != "_hoodie_file_name"])


def _data_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts
            and not p.name.startswith(".")]


def _run(path: Path, instant: str) -> None:
    execute_instant(HudiTable.load(str(path)), instant, LocalRunner(2))
    assert HudiTable.load(str(path)).timeline.get(instant).is_completed


def _schedule(path: Path, action: str, *options: str) -> str:
    args = ["schedule", str(path), "--action", action]
    for option in options:
        args += ["--option", option]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout.split()[0]


def test_lance_fixture_is_clustered_into_lance_files(fixture_tables, tmp_path):
    path = copy_fixture(fixture_tables, "cow_v9_lance_nonpartitioned", tmp_path, drop_metadata_table=True)
    before = _rows(hudi_rs_table(path))
    instant = _schedule(path, "clustering", "hoodie.clustering.async.max.commits=1")
    _run(path, instant)
    table = HudiTable.load(str(path))
    written = [fs.base_file for fs in table.file_system_view().latest_slices() if fs.base_instant == instant]
    assert written and all(f.path.endswith(".lance") for f in written)
    assert not any(p.suffix == ".parquet" for p in _data_files(path))
    assert _rows(hudi_rs_table(path)) == before
    assert _rows(read_snapshot(table)) == before
    files = len(_data_files(path))
    instant = _schedule(path, "clean", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
                        "hoodie.cleaner.fileversions.retained=1")
    _run(path, instant)
    assert len(_data_files(path)) < files
    assert _rows(hudi_rs_table(path)) == before


def test_lance_fixture_with_its_metadata_table_is_not_planned(fixture_tables, tmp_path):
    path = copy_fixture(fixture_tables, "cow_v9_lance_nonpartitioned", tmp_path)
    result = runner.invoke(app, ["schedule", str(path), "--action", "clustering"])
    assert result.exit_code == 1 and "column_stats, files, record_index" in result.stderr


def test_virtual_key_fixture_clustered_as_java_writes_it(fixture_tables, tmp_path):
    """No bloom filter, null meta fields: hudi-rs and our reader return the data columns, unchanged."""
    path = copy_fixture(fixture_tables, "cow_v6_simplekeygen_hivestyle_no_metafields", tmp_path)
    before = rows(hudi_rs_table(path))
    instant = plan_clustering(HudiTable.load(str(path)), sort_columns="id")
    _run(path, instant)
    assert rows(hudi_rs_table(path)) == before
    assert rows(read_snapshot(HudiTable.load(str(path)))) == before
    new = [p for p in _data_files(path) if instant in p.name]
    assert new
    for p in new:
        assert FOOTER_KEY not in pq.read_metadata(p).metadata
        assert pq.read_table(p, columns=["_hoodie_record_key"]).column(0).null_count == pq.read_metadata(p).num_rows


def _writer_table(tmp_path: Path, layout: str, table_type: str, version: int, **extra):
    path = tmp_path / f"{layout}_{table_type}_{version}"
    model = write_table(path, layout, table_type, version, **extra)
    return path, model, LAYOUTS[layout][2]


def _model_rows(table, model) -> list[dict]:
    return rows(table, MODEL_COLUMNS)


@pytest.mark.parametrize("layout,version,fmt", [
    ("time_based_hourly", 9, "LANCE"), ("nonpartitioned", 9, "LANCE"), ("urlencoded", 9, "PARQUET"),
    ("time_based_hive", 6, "PARQUET"), ("two_fields", 8, "PARQUET"), ("plain_nested_value", 9, "PARQUET"),
])
def test_services_keep_rows_on_writer_made_tables(tmp_path, layout, version, fmt):
    """MOR: compaction, then clustering, then clean; after each, hudi-rs reads what the model says, and every
    base file is in the table's format."""
    path, model, partitions = _writer_table(tmp_path, layout, "MERGE_ON_READ", version, base_file_format=fmt)
    expected = model.expected()
    assert _model_rows(hudi_rs_table(path), model) == expected
    for plan in (plan_compaction, plan_clustering, lambda t: plan_clean_of_old_versions(t)[0]):
        _run(path, plan(HudiTable.load(str(path))))
        assert _model_rows(hudi_rs_table(path), model) == expected
        assert _model_rows(read_snapshot(HudiTable.load(str(path))), model) == expected
    suffixes = {p.suffix for p in _data_files(path)}
    assert suffixes == {f".{fmt.lower()}"}, suffixes
    table = HudiTable.load(str(path))
    assert {fs.partition for fs in table.file_system_view().latest_slices()} == partitions


def test_lance_table_compaction_writes_lance(tmp_path):
    path, model, _ = _writer_table(tmp_path, "time_based_hourly", "MERGE_ON_READ", 9, base_file_format="LANCE")
    instant = _schedule(path, "compaction", "hoodie.compact.inline.max.delta.commits=1")
    assert not plan_stats(HudiTable.load(str(path)), instant).within_budget, "Lance files are merged in memory"
    _run(path, instant)
    table = HudiTable.load(str(path))
    compacted = [fs for fs in table.file_system_view().latest_slices() if fs.base_instant == instant]
    assert compacted and all(fs.base_file.path.endswith(".lance") and not fs.log_files for fs in compacted)
    assert _model_rows(hudi_rs_table(path), model) == model.expected()
