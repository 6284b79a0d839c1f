"""Java Hudi judges TMS's partial merges. MERGE_ON_READ tables written by Java Hudi with
`PartialUpdateAvroPayload`: Hudi 0.15.0 (table version 6, the payload class itself) and Hudi 1.1.1 (table version
9, which writes the payload's semantics as event-time ordering with partial update mode IGNORE_DEFAULTS). Upserts
leave `name` or `value` null (the older value stays), arrive with a lower ordering value (they fill only what
the winner leaves null) or insert. Java Hudi's snapshot read is the model's rows, TMS's library reads the same
rows, and after TMS compacts the file groups Java Hudi reads them again (snapshot and read-optimized). The
harness (tests/hudi_java) is never skipped: a machine without it fails here with one line."""
from __future__ import annotations

import pytest
from execute_support import plan_compaction
from hudi_java.harness import JavaWriter

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.records.merge_rules import LegacyPartial, MergeRules, PartialMode, merge_rules
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable

pytestmark = [pytest.mark.slow, pytest.mark.beside]
COLUMNS = ["id", "part", "ts", "name", "value"]
OPTIONS = {"hoodie.compact.inline": "false", "hoodie.clean.automatic": "false", "hoodie.clustering.inline": "false",
           "hoodie.embed.timeline.server": "false", "hoodie.metadata.enable": "false",
           "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.PartialUpdateAvroPayload"}
RULES = {6: MergeRules(("ts",), partial=PartialMode.IGNORE_DEFAULTS, legacy_partial=LegacyPartial.PARTIAL_UPDATE),
         9: MergeRules(("ts",), partial=PartialMode.IGNORE_DEFAULTS)}


def _row(i: int, ts: int, name: str | None, value: int | None) -> dict:
    return {"id": f"k{i:02d}", "part": ("americas", "europe")[i % 2], "ts": ts, "name": name, "value": value}


def _plain(rows: list[dict]) -> list[dict]:
    return sorted(({c: r[c] for c in COLUMNS} for r in rows), key=lambda r: r["id"])


@pytest.mark.parametrize("version", [6, 9])
def test_java_hudi_and_tms_agree_on_partial_updates(java_hudi, tmp_path, version):
    writer = JavaWriter(java_hudi(version), tmp_path / f"partial_v{version}", "MERGE_ON_READ", OPTIONS)
    writer.write("insert", [_row(i, 1, f"base{i}", i) for i in range(10)])
    writer.write("upsert", [_row(i, 2, None, 100 + i) for i in range(4)]     # name stays base{i}
                 + [_row(i, 2, f"second{i}", None) for i in (4, 5)]         # value stays i
                 + [_row(6, 0, "older", None)]                              # ts 0 < 1: the base row wins whole
                 + [_row(7, 0, "older", None)])
    writer.write("upsert", [_row(0, 3, "third0", None)]                     # value stays 100 (the first log record)
                 + [_row(1, 1, "lower", 999)]                               # ts 1 < 2: fills only the null name
                 + [_row(7, 5, None, None)]                                 # wins, every field filled
                 + [_row(10, 3, None, 10)])                                 # an insert with a null field
    expected = {r["id"]: r for r in [_row(i, 1, f"base{i}", i) for i in range(10)]}
    expected |= {f"k{i:02d}": _row(i, 2, f"base{i}", 100 + i) for i in range(4)}
    expected |= {f"k{i:02d}": _row(i, 2, f"second{i}", i) for i in (4, 5)}
    expected |= {"k00": _row(0, 3, "third0", 100), "k01": _row(1, 2, "lower", 101), "k07": _row(7, 5, "older", 7),
                 "k10": _row(10, 3, None, 10)}
    want = sorted(expected.values(), key=lambda r: r["id"])

    assert _plain(writer.read("snapshot")) == want, "Java Hudi's own read"
    table = HudiTable.load(str(writer.path))
    assert merge_rules(table.config) == RULES[version]
    assert _plain(read_snapshot(table).to_pylist()) == want, "TMS's read of Java Hudi's log files"
    instant = plan_compaction(table)
    execute_instant(HudiTable.load(str(writer.path)), instant, LocalRunner())
    assert HudiTable.load(str(writer.path)).timeline.get(instant).is_completed
    assert _plain(writer.read("snapshot")) == want, "Java's read after TMS compacted"
    assert _plain(writer.read("read_optimized")) == want, "the compacted base files"
