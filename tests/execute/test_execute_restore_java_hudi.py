"""Hudi itself judges a restore in place: a MERGE_ON_READ table (version 8, with its metadata table) written by
Java Hudi, savepointed by TMS, then overwritten by mistake; TMS restores it to the savepoint under the writers'
lock. Java Hudi then reads the rows of the savepoint (through the metadata table), hudi-rs reads the same, and
the Java writer goes on writing. The harness (tests/hudi_java) is never skipped: a machine without it fails
here with one line naming what is missing."""
from __future__ import annotations

import copy

import pytest
from hudi_java.harness import FILESYSTEM_LOCK, JavaWriter, table_lock_policies
from support import hudi_rs_table

from tms.execute.restore import restore_in_place
from tms.execute.runner import LocalRunner
from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import create_savepoint

pytestmark = [pytest.mark.slow, pytest.mark.beside]
PARTITIONS = ["americas", "asia", "europe"]
COLUMNS = ["id", "part", "ts", "name", "value"]
OPTIONS = {"hoodie.compact.inline": "false", "hoodie.clustering.inline": "false", "hoodie.clean.automatic": "false",
           "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
           "hoodie.cleaner.policy.failed.writes": "LAZY", "hoodie.write.lock.provider": FILESYSTEM_LOCK,
           "hoodie.embed.timeline.server": "false"}


def row(i: int, ts: int, name: str = "n") -> dict:
    return {"id": f"k{i:03d}", "part": PARTITIONS[i % 3], "ts": ts, "name": f"{name}{i}", "value": i * ts}


def _plain(rows: list[dict]) -> list[dict]:
    return sorted(({c: r[c] for c in COLUMNS} for r in rows), key=lambda r: r["id"])


def test_java_reads_and_writes_a_table_restored_to_a_savepoint(tmp_path, java_hudi):
    driver = java_hudi(8)
    writer = JavaWriter(driver, tmp_path / "restored", "MERGE_ON_READ", OPTIONS)
    writer.write("insert", [row(i, 1) for i in range(12)])
    kept = writer.write("upsert", [row(i, 2) for i in range(0, 12, 2)])
    at_savepoint = copy.deepcopy(writer.model)
    table = HudiTable.load(str(writer.path))
    assert create_savepoint(table).timestamp == kept

    writer.write("upsert", [row(i, 9, "bad") for i in range(12)])
    writer.write("insert_overwrite", [row(i, 9, "over") for i in range(0, 12, 3)])
    assert writer.read() != _plain(list(at_savepoint.values()))

    with TransactionManager.from_options(HudiTable.load(str(writer.path)), table_lock_policies()) as txn:
        result = restore_in_place(txn.table, kept, LocalRunner(), transactions=txn)
    assert len(result.rolled_back) == 2

    writer.model = at_savepoint
    assert _plain(writer.read()) == writer.expected()
    assert _plain(hudi_rs_table(writer.path).to_pylist()) == writer.expected()
    writer.write("upsert", [row(i, 20, "after") for i in range(1, 12, 4)])  # the writer continues
    assert _plain(writer.read()) == writer.expected()
    assert _plain(hudi_rs_table(writer.path).to_pylist()) == writer.expected()
