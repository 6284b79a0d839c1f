"""Java Hudi judges TMS's merge of AWS DMS change records. Java Hudi writes a MERGE_ON_READ table with
`AWSDmsAvroPayload`: Hudi 1.1.1 (table version 9) records its semantics in the table's configuration, commit-time
ordering and the delete marker `Op = 'D'`, which TMS merges; it reads and compacts the table and Java Hudi
reads the same rows after. On Hudi 0.15.0 (table version 6) the payload class is a Java merger TMS does not
implement: the table is refused in one line, before anything is written. The harness (tests/hudi_java) is
never skipped: a machine without it fails here with one line."""
from __future__ import annotations

import pytest
from execute_support import plan_compaction
from hudi_java.harness import JavaWriter

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.errors import UnsupportedTableError
from tms.hudi.records.merge_rules import MergeRules, merge_rules
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.capabilities import capabilities

pytestmark = [pytest.mark.slow, pytest.mark.beside]
COLUMNS = ["id", "part", "ts", "name", "value", "Op"]
OPTIONS = {"hoodie.compact.inline": "false", "hoodie.clean.automatic": "false", "hoodie.clustering.inline": "false",
           "hoodie.embed.timeline.server": "false", "hoodie.metadata.enable": "false",
           "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.AWSDmsAvroPayload"}


def _row(i: int, ts: int, op: str, name: str) -> dict:
    return {"id": f"k{i:02d}", "part": ("americas", "europe")[i % 2], "ts": ts, "name": f"{name}{i}",
            "value": i * ts, "Op": op}


def _plain(rows: list[dict]) -> list[dict]:
    return sorted(({c: r[c] for c in COLUMNS} for r in rows), key=lambda r: r["id"])


def _write_changes(writer: JavaWriter) -> list[dict]:
    """A DMS task's changes as Hudi receives them (every change an upsert; a delete is Op = 'D'); the rows a
    reader must see after them."""
    def upsert(rows: list[dict]) -> None:
        writer.write("upsert", rows, string_columns=["Op"])

    upsert([_row(i, 1, "I", "n") for i in range(10)])
    upsert([_row(i, 2, "U", "u") for i in range(4)] + [_row(4, 2, "D", "gone"), _row(5, 2, "D", "gone")])
    upsert([_row(4, 3, "I", "back"), _row(6, 3, "D", "gone"), _row(0, 3, "U", "again"), _row(12, 3, "I", "new")])
    expected = {r["id"]: r for r in [_row(i, 1, "I", "n") for i in range(10)]}
    expected |= {f"k{i:02d}": _row(i, 2, "U", "u") for i in range(4)}
    expected |= {"k04": _row(4, 3, "I", "back"), "k00": _row(0, 3, "U", "again"), "k12": _row(12, 3, "I", "new")}
    for gone in ("k05", "k06"):
        del expected[gone]
    return sorted(expected.values(), key=lambda r: r["id"])


def test_java_hudi_and_tms_agree_on_aws_dms_changes_on_hudi_1_1(java_hudi, tmp_path):
    writer = JavaWriter(java_hudi(9), tmp_path / "dms_v9", "MERGE_ON_READ", OPTIONS)
    want = _write_changes(writer)
    assert _plain(writer.read("snapshot", extra_columns=("Op",))) == want, "Java Hudi's own read"
    table = HudiTable.load(str(writer.path))
    assert merge_rules(table.config) == MergeRules((), "Op", "D")
    assert _plain(read_snapshot(table).to_pylist()) == want, "TMS's read of Java Hudi's log files"
    instant = plan_compaction(table)
    execute_instant(HudiTable.load(str(writer.path)), instant, LocalRunner())
    assert HudiTable.load(str(writer.path)).timeline.get(instant).is_completed
    assert _plain(writer.read("snapshot", extra_columns=("Op",))) == want, "Java's read after TMS compacted"
    assert _plain(writer.read("read_optimized", extra_columns=("Op",))) == want, "the compacted base files"
    writer.write("upsert", [_row(1, 4, "D", "gone"), _row(2, 4, "U", "later")], string_columns=["Op"])
    want = [r for r in want if r["id"] != "k01"]
    want = [_row(2, 4, "U", "later") if r["id"] == "k02" else r for r in want]
    assert _plain(writer.read("snapshot", extra_columns=("Op",))) == want, "Java writes on after TMS's compaction"
    assert _plain(read_snapshot(HudiTable.load(str(writer.path))).to_pylist()) == want


def test_the_payload_class_on_hudi_0_15_is_refused_in_one_line_and_nothing_is_written(java_hudi, tmp_path):
    writer = JavaWriter(java_hudi(6), tmp_path / "dms_v6", "MERGE_ON_READ", OPTIONS)
    want = _write_changes(writer)
    assert _plain(writer.read("snapshot", extra_columns=("Op",))) == want, "Java Hudi's own read"
    table = HudiTable.load(str(writer.path))
    refusal = capabilities(table)["compaction"]
    assert not refusal.can_run and "AWSDmsAvroPayload" in refusal.reason and "\n" not in refusal.reason
    before = sorted(p for p in writer.path.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):
        read_snapshot(table)
    assert sorted(p for p in writer.path.rglob("*") if p.is_file()) == before
