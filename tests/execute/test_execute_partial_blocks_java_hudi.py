"""Hudi 1.1's partial-update log blocks (header IS_PARTIAL: records holding only the columns a Spark SQL
`MERGE INTO ... WHEN MATCHED THEN UPDATE SET` assigns, on a MERGE_ON_READ table of version 9), as Java Hudi 1.1.1
writes them: TMS reads the file slices as Java Hudi's snapshot does (the columns a partial record lacks keep the
older values), compacts them, and Java Hudi reads the compacted table with the same rows. The harness
(tests/hudi_java) is never skipped: a machine without it fails here with one line."""
from __future__ import annotations

import pytest
from execute_support import plan_compaction

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.log_format.log_file import BlockType, read_log_file
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable

pytestmark = [pytest.mark.slow, pytest.mark.beside]
COLUMNS = ("id", "part", "ts", "name", "value")  # the harness's schema: its `read` returns these columns


def _rows(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows)


def test_partial_update_blocks_of_java_hudi_read_and_compact_as_java_merges_them(java_hudi, tmp_path):
    driver = java_hudi(9)
    path = tmp_path / "partial_blocks"
    name = f"pb_{tmp_path.name.replace('-', '_')}"

    def sql(statement: str) -> list[dict]:
        return driver.call(op="sql", timeout=600, statement=statement)["rows"]

    def merge(source: str, assignments: str) -> None:
        sql(f"MERGE INTO {name} t USING ({source}) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET {assignments}")

    def java(query_type: str) -> list[tuple]:
        return _rows(driver.call(op="read", timeout=600, path=str(path), query_type=query_type)["rows"])

    sql(f"CREATE TABLE {name} (id STRING, part STRING, ts BIGINT, name STRING, value BIGINT) USING hudi "
        f"LOCATION '{path}' TBLPROPERTIES (type = 'mor', primaryKey = 'id', "
        "preCombineField = 'ts', 'hoodie.metadata.enable' = 'false', 'hoodie.compact.inline' = 'false', "
        "'hoodie.clean.automatic' = 'false', 'hoodie.embed.timeline.server' = 'false')")
    sql(f"INSERT INTO {name} VALUES ('1', 'p', 1, 'a', 10), ('2', 'p', 1, 'b', 20), ('3', 'p', 1, 'c', 30), "
        "('4', 'p', 1, 'd', 40), ('5', 'p', 1, 'e', 50)")
    # a full update of key 2, then two partial updates touching different columns (key 2 in both)
    merge("SELECT '2' AS id, 'p' AS part, CAST(2 AS BIGINT) AS ts, 'b2' AS name, CAST(21 AS BIGINT) AS value",
          "*")
    merge("SELECT '1' AS id, CAST(3 AS BIGINT) AS ts, 'a3' AS name UNION ALL "
          "SELECT '2', CAST(3 AS BIGINT), 'b3'", "name = s.name, ts = s.ts")
    merge("SELECT '2' AS id, CAST(4 AS BIGINT) AS ts, CAST(24 AS BIGINT) AS value UNION ALL "
          "SELECT '3', CAST(4 AS BIGINT), CAST(34 AS BIGINT) UNION ALL "
          "SELECT '5', CAST(4 AS BIGINT), CAST(54 AS BIGINT)", "value = s.value, ts = s.ts")
    # a partial update of a lower ordering value: it loses to key 1's ts 3, and fills only what that lacks
    merge("SELECT '1' AS id, CAST(0 AS BIGINT) AS ts, CAST(19 AS BIGINT) AS value", "value = s.value, ts = s.ts")
    sql(f"DELETE FROM {name} WHERE id = '4'")

    logs = [p for p in path.rglob(".*.log.*") if not p.name.endswith(".crc")]
    blocks = [b for p in logs for b in read_log_file(p.read_bytes())]
    partial = [b for b in blocks if b.is_partial]
    assert len(partial) == 3, "Hudi wrote a partial block for each partial MERGE INTO"
    # their records hold the meta fields and the assigned columns only
    assert sorted(sorted(f["name"] for f in (b.schema or {})["fields"] if not f["name"].startswith("_hoodie"))
                  for b in partial) == [["name", "ts"], ["ts", "value"], ["ts", "value"]]
    assert any(b.block_type is BlockType.DELETE for b in blocks)
    snapshot = java("snapshot")
    # key 1: ts and name of its first partial update; value of the later one, which loses by ts but fills what the
    # winner lacks; key 2: the full update, then each partial update's columns; key 4 deleted
    assert snapshot == [("1", "p", 3, "a3", 19), ("2", "p", 4, "b3", 24), ("3", "p", 4, "c", 34),
                        ("5", "p", 4, "e", 54)]

    table = HudiTable.load(str(path))
    assert _rows(read_snapshot(table).to_pylist()) == snapshot, "TMS's snapshot read of the partial blocks"
    execute_instant(table, plan_compaction(table), LocalRunner())
    assert java("snapshot") == snapshot, "Java Hudi's snapshot read after TMS's compaction"
    assert java("read_optimized") == snapshot, "Java Hudi's read-optimized read of TMS's base files"
    assert _rows(read_snapshot(HudiTable.load(str(path))).to_pylist()) == snapshot
