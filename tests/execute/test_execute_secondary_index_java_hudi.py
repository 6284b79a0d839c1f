"""Hudi itself judges a secondary index TMS built: a MERGE_ON_READ table written by Java Hudi (table version 8 by
Hudi 1.0.2, 9 by Hudi 1.1.1; its metadata table holding `files` and the record index, which Hudi's secondary
indexes need); TMS builds a secondary index on column `name` through the `indexing` action under the writers'
lock. Then Java Hudi:
- reads TMS's index entries through its `hudi_metadata` table function;
- answers a query filtering on `name` with data skipping on, rightly; and uses the index to do it: in a copy of
  the table whose index lacks one record's entry (built by TMS the same way otherwise), the query for that
  record's value finds nothing (Hudi pruned every file the index names no record of);
- writes upserts and deletes that change indexed values, maintaining the index: TMS's metadata reader finds it
  in agreement with the data afterwards, `tms verify` too, and Java's query still answers rightly.
The harness (tests/hudi_java) is never skipped."""
from __future__ import annotations

import shutil

import pytest
from hudi_java.harness import JavaWriter, row, standalone_writer_options, start_driver, table_lock_policies

from tms.hudi.locks import TransactionManager
from tms.hudi.metadata import keys as K
from tms.hudi.metadata import secondary as secondary_module
from tms.hudi.metadata.indexer import build_index
from tms.hudi.metadata.reader import MetadataTable, metadata_partitions
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.verify import verify_table

pytestmark = [pytest.mark.slow, pytest.mark.beside, pytest.mark.timeout(1200)]
INDEX = "secondary_index_name_idx"
# Column statistics off (Java 1.0 indexes fewer columns than tms verify expects): the secondary index and the
# record index it needs are the partitions under test.
OPTIONS = {**standalone_writer_options(), "hoodie.metadata.enable": "true",
           "hoodie.metadata.record.index.enable": "true",
           "hoodie.metadata.index.column.stats.enable": "false",
           "hoodie.metadata.index.partition.stats.enable": "false"}
READ_OPTIONS = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true",
                "hoodie.metadata.record.index.enable": "true"}


def _named(i: int, ts: int, name: str | None) -> dict:
    return {**row(i, ts), "name": name}


def _ids_named(writer: JavaWriter, path, name: str) -> list[str]:
    """The ids Java Hudi's query `name = <name>` returns, data skipping on."""
    view = f"v_{abs(hash((str(path), name)))}"
    options = ", ".join(f"'{k}' '{v}'" for k, v in {"path": str(path), **READ_OPTIONS}.items())
    writer.driver.call(op="sql", statement=f"CREATE OR REPLACE TEMPORARY VIEW {view} USING hudi OPTIONS ({options})")
    rows = writer.driver.call(op="sql", statement=f"SELECT id FROM {view} WHERE name = '{name}'")["rows"]
    return sorted(r["id"] for r in rows)


def _expected_keys(writer: JavaWriter, version: int) -> list[str]:
    """`<name>$<id>` of each live row (no value of the test escapes; a null is indexed by Hudi 1.1 only)."""
    return sorted(f"{r['name']}${r['id']}" if r["name"] is not None else f"\x00${r['id']}"
                  for r in writer.expected() if r["name"] is not None or version == 9)


def _build(path) -> int:
    table = HudiTable.load(str(path))
    with TransactionManager.from_options(table, table_lock_policies()) as txn:
        return build_index(txn.table, INDEX, txn, column="name").records


@pytest.mark.parametrize("version", [8, 9])
def test_java_hudi_uses_and_maintains_the_secondary_index_tms_built(tmp_path, monkeypatch, version):
    # A Java session of its own: Java Hudi keeps state in its session (by table name, and more) that the tests
    # before it in a shared one have made it maintain the record index wrongly.
    driver = start_driver(version, tmp_path / "hudi-driver.log")
    try:
        _run(tmp_path, monkeypatch, version, driver)
    finally:
        driver.close()


def _run(tmp_path, monkeypatch, version: int, driver) -> None:
    writer = JavaWriter(driver, tmp_path / f"secondary_indexed_v{version}", "MERGE_ON_READ", OPTIONS)
    writer.write("insert", [_named(i, 1, f"n{i}") for i in range(12)] + [_named(12, 1, None)])
    writer.write("upsert", [_named(i, 2, "shared") for i in range(0, 12, 3)] + [_named(7, 2, "solo")])
    assert metadata_partitions(HudiTable.load(str(writer.path))) == [K.FILES, K.RECORD_INDEX]
    # A copy whose index will lack k007's entry: the control that shows Java's query reads the index.
    control = tmp_path / "control"
    shutil.copytree(writer.path, control)

    assert _build(writer.path) == len(_expected_keys(writer, version))
    table = HudiTable.load(str(writer.path))
    assert INDEX in metadata_partitions(table)
    assert sorted(MetadataTable(table).records(INDEX)) == _expected_keys(writer, version)
    assert verify_table(table) == []

    # Java reads the entries TMS wrote, and its queries on `name` answer rightly.
    java_keys = driver.call(op="sql", statement=f"SELECT key FROM hudi_metadata('{writer.path}') WHERE type = 7")
    assert sorted(r["key"] for r in java_keys["rows"]) == _expected_keys(writer, version)
    assert _ids_named(writer, writer.path, "shared") == ["k000", "k003", "k006", "k009"]
    assert _ids_named(writer, writer.path, "solo") == ["k007"]
    assert _ids_named(writer, writer.path, "n5") == ["k005"]

    # Java writes on, changing indexed values; it maintains the index TMS built.
    writer.write("upsert", [_named(1, 3, "shared"), _named(3, 3, "moved"), _named(20, 3, "shared"),
                            _named(7, 3, None), _named(12, 3, "was-null")])
    writer.write("delete", [row(6, 4), row(9, 4)])
    table = HudiTable.load(str(writer.path))
    assert sorted(MetadataTable(table).records(INDEX)) == _expected_keys(writer, version)
    # TMS reads the record index Java maintained as Java reads it (type 5: its record index entries)...
    java_index = driver.call(op="sql", statement=f"SELECT key FROM hudi_metadata('{writer.path}') WHERE type = 5")
    assert sorted(MetadataTable(table).records(K.RECORD_INDEX)) == sorted(r["key"] for r in java_index["rows"])
    # ... and finds it in agreement with the data.
    assert verify_table(table) == []
    assert _ids_named(writer, writer.path, "shared") == ["k000", "k001", "k020"]
    assert _ids_named(writer, writer.path, "solo") == []
    assert _ids_named(writer, writer.path, "was-null") == ["k012"]

    # The control last: it is a copy of the same table (same name, same instants), and Java Hudi keeps state by
    # table in its session. (The record index "missing k002 and k011 now and then" was TMS's reader: it placed
    # the log files of a log-only file group in slices by listing order; tests/hudi/fs_view/test_log_file_slices.)
    real_records = secondary_module.SecondaryIndex.records

    def without_k007(self, values, record_keys):
        return [r for r in real_records(self, values, record_keys) if not r.key.endswith("$k007")]

    monkeypatch.setattr(secondary_module.SecondaryIndex, "records", without_k007)
    _build(control)
    monkeypatch.undo()
    assert _ids_named(writer, control, "solo") == []          # pruned by the index: Java used it
    assert _ids_named(writer, control, "n5") == ["k005"]
