"""Every partition layout reads as hudi-rs reads it, and as a model of the writes says: partitions are the
folders holding `.hoodie_partition_metadata` (and those the commits name), at whatever depth, not as deep as
there are partition fields. Tables are made by the writer in each layout, v6, v8 and v9, COW and MOR."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support import hudi_rs_table, rows
from tms.cli import app
from tms.hudi.partitions import PARTITION_METAFILE, list_partitions
from tms.hudi.reader import read_snapshot
from tms.hudi.table import HudiTable
from tms.hudi.writer import create_table_for_records

HOUR_MS = 3_600_000
BASE_MS = 1_705_312_800_000  # 2024-01-15T10:00:00Z
# Values with characters URL encoding escapes ('/', ':', '=', '%', ' ' is kept), and one that nests folders.
CITIES = ["san francisco", "a/b", "x:y=z%"]

# layout -> (partition fields, writer options, the partition folders the records land in)
LAYOUTS = {
    "nonpartitioned": ([], {}, {""}),
    "hive_style": (["city"], {}, {"city=san francisco", "city=a/b", "city=x:y=z%"}),
    "plain_nested_value": (["city"], {"hive_style": False}, {"san francisco", "a/b", "x:y=z%"}),
    "urlencoded": (["city"], {"hive_style": False, "urlencode": True},
                   {"san francisco", "a%2Fb", "x%3Ay%3Dz%25"}),
    "hive_urlencoded": (["city"], {"urlencode": True}, {"city=san francisco", "city=a%2Fb", "city=x%3Ay%3Dz%25"}),
    "two_fields": (["city", "kind"], {"hive_style": False}, {f"{c}/{k}" for c in CITIES for k in ("even", "odd")}),
    "time_based_hourly": (["event_ms"], {"hive_style": False, "partition_time_format": "yyyy/MM/dd/HH"},
                          {"2024/01/15/10", "2024/01/15/11", "2024/01/15/12"}),
    "time_based_hive": (["event_ms"], {"partition_time_format": "yyyy/MM/dd"}, {"event_ms=2024/01/15"}),
}


def _rec(i: int, ts: int) -> dict:
    """Record `i` at version `ts`; its partition values never change."""
    return {"id": i, "ts": ts, "name": f"n{i}-{ts}", "city": CITIES[i % 3], "kind": "odd" if i % 2 else "even",
            "event_ms": BASE_MS + (i % 3) * HOUR_MS}


class Model:
    def __init__(self):
        self.rows: dict[int, dict] = {}

    def upsert(self, recs: list[dict]) -> None:
        for r in recs:
            if r["id"] not in self.rows or r["ts"] >= self.rows[r["id"]]["ts"]:
                self.rows[r["id"]] = r

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            self.rows.pop(i, None)

    def expected(self) -> list[dict]:
        return sorted(({"_hoodie_record_key": str(r["id"]), **r} for r in self.rows.values()),
                      key=lambda r: (r["_hoodie_record_key"], repr(sorted(r.items()))))


def write_table(path: Path, layout: str, table_type: str, version: int, **extra) -> Model:
    fields, options, _ = LAYOUTS[layout]
    writer = create_table_for_records(str(path), [_rec(0, 0)], table_type=table_type, version=version, key=["id"],
                                      ordering=["ts"], partition=fields, **options, **extra)
    model = Model()
    inserts = [_rec(i, 1) for i in range(12)]
    writer.write(inserts, "insert")
    model.upsert(inserts)
    updates = [_rec(i, 2) for i in range(0, 12, 2)] + [_rec(1, 0)]  # record 1 at an older ts loses
    writer.write(updates)
    model.upsert(updates)
    writer.write([_rec(i, 3) for i in (3, 4)], "delete")
    model.delete([3, 4])
    return model


def _columns(table) -> list[str]:
    return ["_hoodie_record_key", "id", "ts", "name", "city", "kind", "event_ms"]


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
    ours = rows(read_snapshot(table), _columns(table))
    assert ours == model.expected()
    assert rows(hudi_rs_table(path), _columns(table)) == ours


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
    assert rows(read_snapshot(table), _columns(table)) == model.expected()


def test_folders_without_metafile_or_commit_are_not_partitions(tmp_path):
    path = tmp_path / "t"
    model = write_table(path, "hive_style", "COPY_ON_WRITE", 9)
    (path / "city=stray" / "deeper").mkdir(parents=True)
    (path / ".spark-staging").mkdir()
    table = HudiTable.load(str(path))
    assert set(list_partitions(table).partitions) == LAYOUTS["hive_style"][2]
    assert rows(read_snapshot(table), _columns(table)) == model.expected()


def test_cli_creates_v9_time_based_table(tmp_path):
    path = tmp_path / "t"
    records = tmp_path / "r.jsonl"
    records.write_text("\n".join(json.dumps(_rec(i, 1)) for i in range(6)))
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
