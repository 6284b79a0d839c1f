"""Hudi itself judges an index TMS built: a MERGE_ON_READ table (version 8, its metadata table holding `files`)
written by Java Hudi; TMS builds its record index through the `indexing` action under the writers' lock. Java
Hudi then reads the rows, and a Java upsert with `hoodie.index.type=RECORD_INDEX` (its index lookups read the
partition TMS built) succeeds and reads back right; `tms verify` finds the record index in agreement with the
data and hudi-rs reads the same rows. The harness (tests/hudi_java) is never skipped."""
from __future__ import annotations

import pytest
from hudi_java.harness import JavaWriter, plain_rows, row, standalone_writer_options, table_lock_policies
from support import hudi_rs_table

from tms.hudi.locks import TransactionManager
from tms.hudi.metadata import keys as K
from tms.hudi.metadata.indexer import build_index
from tms.hudi.metadata.reader import MetadataTable, metadata_partitions
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.verify import verify_table

pytestmark = [pytest.mark.slow, pytest.mark.beside]
# The metadata table holds `files` only (Java 1.0 indexes column stats of fewer columns than tms verify expects): the
# record index is the partition under test.
OPTIONS = {**standalone_writer_options(), "hoodie.metadata.enable": "true",
           "hoodie.metadata.index.column.stats.enable": "false",
           "hoodie.metadata.index.partition.stats.enable": "false"}


def test_java_hudi_uses_the_record_index_tms_built(tmp_path, java_hudi):
    driver = java_hudi(8)
    writer = JavaWriter(driver, tmp_path / "indexed", "MERGE_ON_READ", OPTIONS)
    writer.write("insert", [row(i, 1) for i in range(12)])
    writer.write("upsert", [row(i, 2) for i in range(0, 12, 2)])
    table = HudiTable.load(str(writer.path))
    assert metadata_partitions(table) == [K.FILES]

    with TransactionManager.from_options(table, table_lock_policies()) as txn:
        result = build_index(txn.table, K.RECORD_INDEX, txn)
    assert result.records == 12
    assert K.RECORD_INDEX in metadata_partitions(HudiTable.load(str(writer.path)))
    assert plain_rows(writer.read()) == writer.expected()

    writer.options = {**OPTIONS, "hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "true"}
    writer.write("upsert", [row(i, 3, "ri") for i in range(1, 12, 3)] + [row(20, 3, "new")])
    assert plain_rows(writer.read()) == writer.expected()
    assert plain_rows(hudi_rs_table(writer.path).to_pylist()) == writer.expected()
    table = HudiTable.load(str(writer.path))
    assert verify_table(table) == []
    assert sorted(MetadataTable(table).records(K.RECORD_INDEX)) == sorted(r["id"] for r in writer.expected())
