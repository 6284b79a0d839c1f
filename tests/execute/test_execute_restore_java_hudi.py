"""Hudi itself judges a restore in place: a MERGE_ON_READ table (version 8, with its metadata table) written by
Java Hudi, savepointed by TMS, then overwritten by mistake; TMS restores it to the savepoint under the writers'
lock. Java Hudi then reads the rows of the savepoint (through the metadata table), hudi-rs reads the same, and
the Java writer goes on writing. The harness (tests/hudi_java) is never skipped: a machine without it fails
here with one line naming what is missing."""
from __future__ import annotations

import copy

import pytest
from hudi_java.harness import JavaWriter, plain_rows, row, standalone_writer_options, table_lock_policies
from support import hudi_rs_table

from tms.execute.restore import restore_in_place
from tms.execute.runner import LocalRunner
from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import create_savepoint

pytestmark = [pytest.mark.slow, pytest.mark.beside]
OPTIONS = standalone_writer_options()


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
    assert writer.read() != plain_rows(list(at_savepoint.values()))

    with TransactionManager.from_options(HudiTable.load(str(writer.path)), table_lock_policies()) as txn:
        result = restore_in_place(txn.table, kept, LocalRunner(), transactions=txn)
    assert len(result.rolled_back) == 2

    writer.model = at_savepoint
    assert plain_rows(writer.read()) == writer.expected()
    assert plain_rows(hudi_rs_table(writer.path).to_pylist()) == writer.expected()
    writer.write("upsert", [row(i, 20, "after") for i in range(1, 12, 4)])  # the writer continues
    assert plain_rows(writer.read()) == writer.expected()
    assert plain_rows(hudi_rs_table(writer.path).to_pylist()) == writer.expected()
