"""Java Hudi judges the backups: a MERGE_ON_READ table written by Java Hudi (its metadata table on) is backed up
after each of three (simulated) days' writes; two versions are kept; each kept version, restored to a new
path, reads in Java Hudi (and hudi-rs) as the rows Java was acknowledged by that day, and Java goes on writing
to a restored table (its metadata table rebuilt from the restored files)."""
from __future__ import annotations

import pytest
from hudi_java.harness import JavaWriter
from support import hudi_rs_table

from tms.backup.expire import expire_versions
from tms.backup.layout import BackupStore
from tms.backup.restore import restore_version
from tms.backup.take import take_backup
from tms.hudi.table.hudi_table import HudiTable

pytestmark = [pytest.mark.slow, pytest.mark.beside]
PARTITIONS = ["americas", "asia", "europe"]
# A lone writer, its table services off (as a table TMS serves), no timeline server to start per write.
OPTIONS = {"hoodie.compact.inline": "false", "hoodie.clean.automatic": "false", "hoodie.embed.timeline.server": "false",
           "hoodie.clustering.inline": "false"}


def row(i: int, ts: int, name: str = "n") -> dict:
    return {"id": f"k{i:03d}", "part": PARTITIONS[i % 3], "ts": ts, "name": f"{name}{i}", "value": i * ts}


def _rs_rows(path) -> list[dict]:
    table = hudi_rs_table(path)
    return sorted(table.select(["id", "part", "ts", "name", "value"]).to_pylist(), key=lambda r: r["id"])


def test_java_hudi_reads_and_writes_restored_backup_versions(tmp_path, java_hudi):
    driver = java_hudi(8)
    writer = JavaWriter(driver, tmp_path / "trips", "MERGE_ON_READ", OPTIONS)
    store = BackupStore(str(tmp_path / "backups" / "trips-1"))
    by_day = []
    for day in range(3):
        writer.write("insert" if day == 0 else "upsert",
                     [row(i, day + 1, f"d{day}-") for i in range(day * 3, day * 3 + 12)])
        by_day.append(writer.expected())
        take_backup(HudiTable.load(str(writer.path)), store)
    assert expire_versions(store, keep_versions=2).expired == (1,)
    for version, expected in ((2, by_day[1]), (3, by_day[2])):
        # Under a folder of its own, the restored table's path ends in its name (the harness names the table so).
        restored = JavaWriter(driver, tmp_path / f"restored-{version}" / "trips", "MERGE_ON_READ", OPTIONS)
        restore_version(store, version, str(restored.path))
        assert restored.read() == expected, f"Java Hudi's read of restored version {version}"
        assert _rs_rows(restored.path) == expected, f"hudi-rs's read of restored version {version}"
    restored.model = {r["id"]: r for r in by_day[2]}
    restored.write("upsert", [row(i, 9, "after-") for i in (0, 20)])
    assert restored.read() == restored.expected(), "Java Hudi writes on over the restored table"
