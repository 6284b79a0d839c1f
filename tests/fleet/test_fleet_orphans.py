"""Orphan files: a file no instant references, written after the active timeline's first instant and older
than the safety window, is an orphan (`tms verify` says so); a younger one, or one named for an instant older
than the timeline (it may have been archived), is not; removal deletes only files that are orphans still."""
from __future__ import annotations

import json
import os
import time
import uuid

import pyarrow.parquet as pq
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.orphans import find_orphans, remove_orphans
from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "city": "sf" if i % 2 else "la"} for i in range(6)]
HOUR = 3600


def _file(base, instant: int, age: float, *, readable: bool = False) -> str:
    """`readable`: an empty base file of the table's schema (an archived commit's file is read as committed)."""
    rel = f"city=la/{uuid.uuid4()}-0_0-1-1_{instant}.parquet"
    if readable:
        pq.write_table(pq.read_table(next((base / "city=la").glob("*.parquet"))).slice(0, 0), base / rel)
    else:
        (base / rel).write_bytes(b"x" * 10)
    os.utime(base / rel, (time.time() - age, time.time() - age))
    return rel


def test_orphans_are_told_exactly_and_removed_only_while_they_are(tmp_path):
    base = tmp_path / "t"
    create_table_for_records(str(base), ROWS, table_type="COPY_ON_WRITE", version=8, key=["id"], ordering=["ts"],
                             partition=["city"]).write(ROWS, "insert")
    table = HudiTable.load(str(base))
    first = int(min(i.timestamp for i in table.timeline.instants()))
    archived = _file(base, first - 5000, 2 * HOUR, readable=True)  # before the timeline: an archived commit's
    orphan = _file(base, first + 5000, 2 * HOUR)
    young = _file(base, first + 6000, 60)

    found = find_orphans(table, now=time.time(), safety_seconds=HOUR)
    assert [o.path for o in found] == [orphan]
    assert [o.path for o in find_orphans(table, now=time.time(), safety_seconds=3 * HOUR)] == []

    result = CliRunner().invoke(app, ["verify", str(base), "--json", "--orphan-safety-hours", "1"])
    assert result.exit_code == 1
    details = {p["where"]: p["detail"] for p in json.loads(result.stdout)["problems"]
               if p["check"] == "unreferenced_file"}
    assert "an orphan (older than the 1 h safety window)" in details[orphan]
    assert "orphan" not in details[young].split(";")[-1]
    assert archived not in details  # committed for Hudi's readers (containsOrBeforeTimelineStarts): not a leftover

    rows = read_snapshot(table).sort_by("id").to_pylist()
    assert remove_orphans(table, found, now=time.time(), safety_seconds=HOUR) == found
    assert not (base / orphan).exists() and (base / young).exists() and (base / archived).exists()
    assert read_snapshot(HudiTable.load(str(base))).sort_by("id").to_pylist() == rows
    (base / young).write_bytes(b"changed")  # what is no longer the file approved is left alone
    stale = find_orphans(table, now=time.time() + 2 * HOUR, safety_seconds=HOUR)
    (base / young).write_bytes(b"changed again, bigger")
    assert remove_orphans(table, stale, now=time.time() + 2 * HOUR, safety_seconds=HOUR) == []
    assert (base / young).exists()
