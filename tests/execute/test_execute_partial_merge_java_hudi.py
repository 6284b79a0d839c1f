"""Java Hudi judges TMS's partial merges. MERGE_ON_READ tables written by Java Hudi with
`PartialUpdateAvroPayload` and with `OverwriteNonDefaultsWithLatestAvroPayload`: Hudi 0.15.0 (table version 6, the
payload classes themselves) and Hudi 1.1.1 (table version 9, which writes their semantics as event-time, resp.
commit-time, ordering with partial update mode IGNORE_DEFAULTS). Upserts leave `name` or `value` null (the older
value stays), arrive with a lower ordering value (under PartialUpdate they fill only what the winner leaves null)
or insert. Java Hudi's snapshot read is the model's rows, TMS's library reads the same
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
           "hoodie.embed.timeline.server": "false", "hoodie.metadata.enable": "false"}
PAYLOAD = "org.apache.hudi.common.model."
IGNORE = PartialMode.IGNORE_DEFAULTS
RULES = {("PartialUpdateAvroPayload", 6): MergeRules(("ts",), partial=IGNORE,
                                                     legacy_partial=LegacyPartial.PARTIAL_UPDATE, partial_blocks=False),
         ("PartialUpdateAvroPayload", 9): MergeRules(("ts",), partial=IGNORE),
         ("OverwriteNonDefaultsWithLatestAvroPayload", 6): MergeRules(
             ("ts",), base_loses=True, partial=IGNORE, legacy_partial=LegacyPartial.OVERWRITE_NON_DEFAULTS,
             partial_blocks=False),
         ("OverwriteNonDefaultsWithLatestAvroPayload", 9): MergeRules(partial=IGNORE)}


def _row(i: int, ts: int, name: str | None, value: int | None) -> dict:
    return {"id": f"k{i:02d}", "part": ("americas", "europe")[i % 2], "ts": ts, "name": name, "value": value}


def _plain(rows: list[dict]) -> list[dict]:
    return sorted(({c: r[c] for c in COLUMNS} for r in rows), key=lambda r: r["id"])


def _expected(payload: str, version: int) -> list[dict]:
    expected = {r["id"]: r for r in [_row(i, 1, f"base{i}", i) for i in range(10)]}
    expected |= {f"k{i:02d}": _row(i, 2, f"base{i}", 100 + i) for i in range(4)}
    expected |= {f"k{i:02d}": _row(i, 2, f"second{i}", i) for i in (4, 5)}
    expected["k10"] = _row(10, 3, None, 10)
    if payload == "PartialUpdateAvroPayload":  # the greater ordering value first, the others fill its nulls
        expected |= {"k00": _row(0, 3, "third0", 100), "k01": _row(1, 2, "lower", 101),
                     "k07": _row(7, 5, "older", 7)}
    elif version == 9:  # commit time: the later write first, the earlier ones fill its nulls
        expected |= {"k00": _row(0, 3, "third0", 100), "k01": _row(1, 1, "lower", 999),
                     "k06": _row(6, 0, "older", 6), "k07": _row(7, 5, "older", 7)}
    else:  # Hudi 0.15: the log's record of the greatest ordering value, whole; the base row fills its nulls
        expected |= {"k00": _row(0, 3, "third0", 0), "k01": _row(1, 2, "base1", 101),
                     "k06": _row(6, 0, "older", 6), "k07": _row(7, 5, "base7", 7)}
    return sorted(expected.values(), key=lambda r: r["id"])


@pytest.mark.parametrize("payload,version", sorted(RULES))
def test_java_hudi_and_tms_agree_on_partial_updates(java_hudi, tmp_path, payload, version):
    options = {**OPTIONS, "hoodie.datasource.write.payload.class": PAYLOAD + payload}
    writer = JavaWriter(java_hudi(version), tmp_path / f"partial_v{version}", "MERGE_ON_READ", options)
    writer.write("insert", [_row(i, 1, f"base{i}", i) for i in range(10)])
    writer.write("upsert", [_row(i, 2, None, 100 + i) for i in range(4)]     # name stays base{i}
                 + [_row(i, 2, f"second{i}", None) for i in (4, 5)]         # value stays i
                 + [_row(6, 0, "older", None)]                              # PartialUpdate: ts 0 < 1, the base wins
                 + [_row(7, 0, "older", None)])
    writer.write("upsert", [_row(0, 3, "third0", None)]                     # value: 100 (the first log record), or 0
                 + [_row(1, 1, "lower", 999)]                               # PartialUpdate: fills only the null name
                 + [_row(7, 5, None, None)]                                 # every field filled
                 + [_row(10, 3, None, 10)])                                 # an insert with a null field
    want = _expected(payload, version)

    assert _plain(writer.read("snapshot")) == want, "Java Hudi's own read"
    table = HudiTable.load(str(writer.path))
    assert merge_rules(table.config) == RULES[(payload, version)]
    assert _plain(read_snapshot(table).to_pylist()) == want, "TMS's read of Java Hudi's log files"
    instant = plan_compaction(table)
    execute_instant(HudiTable.load(str(writer.path)), instant, LocalRunner())
    assert HudiTable.load(str(writer.path)).timeline.get(instant).is_completed
    assert _plain(writer.read("snapshot")) == want, "Java's read after TMS compacted"
    assert _plain(writer.read("read_optimized")) == want, "the compacted base files"
