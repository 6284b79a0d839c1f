"""Every partition layout reads as hudi-rs reads it, and as a model of the writes says: partitions are the
folders holding `.hoodie_partition_metadata` (and those the commits name), at whatever depth, not as deep as
there are partition fields. Tables are made by the writer in each layout, v6, v8 and v9, COW and MOR."""
from __future__ import annotations

import json

import pytest
from layout_tables import LAYOUTS, MODEL_COLUMNS, make_record, write_table
from support import hudi_rs_table, rows
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.fs_view.partitions import (
    PARTITION_METAFILE,
    committed_partitions,
    list_partitions,
    sample_partition_folders,
)
from tms.hudi.records.reader import read_snapshot
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.hudi_table import HudiTable


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layout_reads_as_hudi_rs_and_the_model(tmp_path, layout, table_type, version):
    path = tmp_path / "t"
    model = write_table(path, layout, table_type, version)
    table = HudiTable.load(str(path))
    assert set(list_partitions(table).partitions) == LAYOUTS[layout][2]
    for partition in LAYOUTS[layout][2]:
        assert (path / partition / PARTITION_METAFILE).is_file()
    ours = rows(read_snapshot(table), MODEL_COLUMNS)
    assert ours == model.expected()
    assert rows(hudi_rs_table(path), MODEL_COLUMNS) == ours


@pytest.mark.parametrize("layout", ["time_based_hourly", "two_fields"])
def test_partition_metafile_depth_counts_folder_levels(tmp_path, layout):
    """As Java writes it: `partitionDepth` is the number of folder levels (4 for `2024/01/15/10`)."""
    path = tmp_path / "t"
    write_table(path, layout, "COPY_ON_WRITE", 9)
    for partition in LAYOUTS[layout][2]:
        text = (path / partition / PARTITION_METAFILE).read_text()
        assert f"partitionDepth={partition.count('/') + 1}" in text.splitlines()


def test_committed_partition_without_metafile_is_read(tmp_path):
    """A partition the commits name is read even when its metafile is missing."""
    path = tmp_path / "t"
    model = write_table(path, "time_based_hourly", "MERGE_ON_READ", 8)
    (path / "2024/01/15/11" / PARTITION_METAFILE).unlink()
    table = HudiTable.load(str(path))
    assert "2024/01/15/11" in list_partitions(table).partitions
    assert rows(read_snapshot(table), MODEL_COLUMNS) == model.expected()


def test_folders_without_metafile_or_commit_are_not_partitions(tmp_path):
    path = tmp_path / "t"
    model = write_table(path, "hive_style", "COPY_ON_WRITE", 9)
    (path / "city=stray" / "deeper").mkdir(parents=True)
    (path / ".spark-staging").mkdir()
    table = HudiTable.load(str(path))
    assert set(list_partitions(table).partitions) == LAYOUTS["hive_style"][2]
    assert rows(read_snapshot(table), MODEL_COLUMNS) == model.expected()


def test_cli_creates_v9_time_based_table(tmp_path):
    path = tmp_path / "t"
    records = tmp_path / "r.jsonl"
    records.write_text("\n".join(json.dumps(make_record(i, 1)) for i in range(6)))
    result = CliRunner().invoke(app, ["write", str(path), "--records", str(records), "--create", "--table-version",
                                      "9", "--table-type", "COPY_ON_WRITE", "--key", "id", "--ordering", "ts",
                                      "--partition", "event_ms", "--no-hive-style",
                                      "--partition-time-format", "yyyy/MM/dd/HH"])
    assert result.exit_code == 0, result.output
    config = HudiTable.load(str(path)).config
    assert config.version == 9 and config.get("hoodie.table.keygenerator.type") == "TIMESTAMP"
    assert config.get("hoodie.table.metadata.partitions") is None  # no metadata table
    assert (path / "2024/01/15/12").is_dir()
    assert len(hudi_rs_table(path)) == 6
    listed = CliRunner().invoke(app, ["read", str(path)])
    assert listed.exit_code == 0 and len(listed.output.splitlines()) == 6


def test_committed_partitions_follow_the_timeline_as_instants_come_and_go(tmp_path):
    """A loaded timeline's committed partitions are kept up to date from what was added (a planning pass
    costs the new instants, not the timeline) and equal a fresh reading after additions and removals."""
    path = tmp_path / "t"
    write_table(path, "hive_style", "COPY_ON_WRITE", 8)
    table = HudiTable.load(str(path))

    def fresh() -> set[str]:
        return committed_partitions(HudiTable.load(str(path)).timeline)

    everything = committed_partitions(table.timeline)
    assert everything == fresh() and everything
    timeline_dir = path / ".hoodie" / "timeline"
    newest = max(timeline_dir.glob("*.commit"))
    moved = tmp_path / newest.name
    newest.rename(moved)  # removed (as archival or a restore does)
    table.timeline.reload()
    assert committed_partitions(table.timeline) == fresh()
    moved.rename(newest)  # and back: taken from what was added
    table.timeline.reload()
    assert committed_partitions(table.timeline) == fresh() == everything
    added, _ = table.timeline.added_since((table.timeline._era, 0))
    assert added == [newest.name.split("_")[0]]


def test_a_sample_of_nested_partitions_is_bounded_and_stands_for_them_all(tmp_path, monkeypatch):
    """The live view's sample (issue 37, item 5): at most about the listings it is given, wherever the
    partitions are (two levels here), and its share estimates their number; all of them when the listings allow."""
    for day in range(30):
        for hour in range(24):
            folder = tmp_path / f"dt={day:02d}" / f"hr={hour:02d}"
            folder.mkdir(parents=True)
            (folder / PARTITION_METAFILE).write_text("")
    (tmp_path / ".hoodie").mkdir()
    storage = LocalStorage(str(tmp_path))
    listings: list[str] = []
    for name in ("listdir", "names"):
        def counted(self, rel, _listing=getattr(LocalStorage, name)):
            listings.append(rel)
            return _listing(self, rel)
        monkeypatch.setattr(LocalStorage, name, counted)

    sample = sample_partition_folders(storage, 60)
    assert len(listings) <= 60 and sample.listing.partitions and not sample.complete
    assert all(p.count("/") == 1 and p in sample.listing.files for p in sample.listing.partitions)
    assert round(len(sample.listing.partitions) / sample.share) == 720
    whole = sample_partition_folders(storage, 2000)
    assert whole.complete and len(whole.listing.partitions) == 720
