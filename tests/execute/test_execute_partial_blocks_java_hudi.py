"""Hudi 1.1's partial-update log blocks (header IS_PARTIAL: records holding only the columns a Spark SQL
`MERGE INTO ... WHEN MATCHED THEN UPDATE SET` assigns, on a MERGE_ON_READ table of version 9), as Java Hudi 1.1.1
writes them: TMS refuses to read or compact the file slice in one line, before anything is written (merged as full
records, the columns such a block lacks would read as nulls instead of keeping the older values). The harness
(tests/hudi_java) is never skipped: a machine without it fails here with one line."""
from __future__ import annotations

import pytest
from execute_support import plan_compaction

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.errors import UnsupportedTableError
from tms.hudi.log_format.log_file import read_log_file
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable

pytestmark = [pytest.mark.slow, pytest.mark.beside]


def test_a_partial_update_block_of_java_hudi_is_refused_in_one_line(java_hudi, tmp_path):
    driver = java_hudi(9)
    path = tmp_path / "partial_blocks"
    name = f"pb_{tmp_path.name.replace('-', '_')}"

    def sql(statement: str) -> list[dict]:
        return driver.call(op="sql", timeout=600, statement=statement)["rows"]

    sql(f"CREATE TABLE {name} (id INT, name STRING, price DOUBLE, ts BIGINT) USING hudi LOCATION '{path}' "
        "TBLPROPERTIES (type = 'mor', primaryKey = 'id', preCombineField = 'ts', 'hoodie.metadata.enable' = 'false', "
        "'hoodie.compact.inline' = 'false', 'hoodie.clean.automatic' = 'false', "
        "'hoodie.embed.timeline.server' = 'false')")
    sql(f"INSERT INTO {name} VALUES (1, 'a', 1.0, 1), (2, 'b', 2.0, 1)")
    sql(f"MERGE INTO {name} t USING (SELECT 1 AS id, CAST(9.5 AS DOUBLE) AS price, CAST(2 AS BIGINT) AS ts) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET price = s.price, ts = s.ts")
    assert {r["id"]: (r["name"], r["price"]) for r in sql(f"SELECT * FROM {name}")} == {1: ("a", 9.5), 2: ("b", 2.0)}
    logs = [p for p in path.rglob(".*.log.*")]
    assert any(b.is_partial for p in logs for b in read_log_file(p.read_bytes())), "Hudi wrote no partial block"

    table = HudiTable.load(str(path))
    with pytest.raises(UnsupportedTableError, match="partial-update block") as raised:
        read_snapshot(table)
    assert "\n" not in str(raised.value)
    instant = plan_compaction(table)
    files_before = sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    with pytest.raises(UnsupportedTableError, match="partial-update block"):
        execute_instant(HudiTable.load(str(path)), instant, LocalRunner())
    assert sorted(p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts) == files_before
