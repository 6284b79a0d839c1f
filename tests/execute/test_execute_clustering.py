"""Clustering on Spark, COW and MOR, v6 and v8: small file groups rewritten into sorted ones of the target
size; readers see the same rows, records keep their commit metadata, writers carry on."""
import math

import pyarrow.parquet as pq
import pytest
from execute_support import ModelledTable, key, plan_clustering, rec

from tms.execute.dispatch import execute_instant
from tms.hudi.records.reader import read_snapshot

META = ["_hoodie_record_key", "_hoodie_commit_time", "_hoodie_commit_seqno"]


def _small_file_groups(tmp_path, table_type, version) -> ModelledTable:
    t = ModelledTable(tmp_path / "t", table_type, version, max_file_records=4)
    t.write([rec(i, 10) for i in range(36)], "insert")  # 12 records per partition: 3 file groups each
    t.write([rec(i, 20) for i in range(0, 36, 4)] + [rec(i, 5, "older") for i in range(1, 36, 8)])
    t.write([key(i) for i in range(2, 36, 9)], "delete")
    return t


@pytest.mark.parametrize("table_type,version", [("COPY_ON_WRITE", 6), ("COPY_ON_WRITE", 8),
                                                ("MERGE_ON_READ", 6), ("MERGE_ON_READ", 8)])
def test_clustering_rewrites_file_groups_sorted(tmp_path, spark_runner, table_type, version):
    t = _small_file_groups(tmp_path, table_type, version)
    t.check()
    before = t.table()
    inputs = {(fs.partition, fs.file_id) for fs in before.file_system_view().latest_slices()}
    meta_before = sorted(read_snapshot(before).select(META).to_pylist(), key=lambda r: r["_hoodie_record_key"])
    ts = plan_clustering(before, sort_columns="name")

    result = execute_instant(t.table(), ts, spark_runner)

    t.check()
    table = t.table()
    done = table.timeline.get(ts)
    assert done.is_completed and done.action == "replacecommit" and result.instant == done
    meta = table.timeline.commit_metadata(done)
    assert meta.operation_type == "CLUSTER"
    assert {(p, f) for p, fids in meta.partition_to_replace_file_ids.items() for f in fids} == inputs
    view = table.file_system_view()
    assert {fs.partition for fs in view.latest_slices()} == {p for p, _ in inputs}
    assert len(view.latest_slices()) == 3, "one output file group per partition"
    for fs in view.latest_slices():
        assert fs.base_instant == ts and not fs.log_files
        names = pq.read_table(tmp_path / "t" / fs.base_file.path, columns=["name"]).column(0).to_pylist()
        assert names == sorted(names)
    meta_after = sorted(read_snapshot(table).select(META).to_pylist(), key=lambda r: r["_hoodie_record_key"])
    assert meta_after == meta_before, "records keep their commit time and seqno"
    assert not (tmp_path / "t" / ".hoodie" / ".temp" / ts).exists()

    t.write([rec(i, 40) for i in range(0, 36, 5)] + [rec(50, 40)])
    t.write([key(7)], "delete")
    t.check()


def test_clustering_splits_groups_at_the_target_size(tmp_path, spark_runner):
    t = _small_file_groups(tmp_path, "MERGE_ON_READ", 8)
    table = t.table()
    input_bytes = {}
    for fs in table.file_system_view().merged_latest_slices():
        input_bytes[fs.partition] = input_bytes.get(fs.partition, 0) + fs.total_bytes
    target = max(input_bytes.values()) // 2 + 1
    ts = plan_clustering(table, target_bytes=target)

    execute_instant(t.table(), ts, spark_runner)

    t.check()
    slices = t.table().file_system_view().latest_slices()
    for partition, size in input_bytes.items():
        assert len([fs for fs in slices if fs.partition == partition]) == math.ceil(size / target)
