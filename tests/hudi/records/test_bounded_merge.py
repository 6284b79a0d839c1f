"""The bounded merge gives the rows of the in-memory merge (`merge_records`), spilled or not: random slices
(a base file, data and delete blocks, rolled-back blocks, both orderings) with a budget so small that the logs
spill to several buckets and the base streams in small batches."""
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_slices import write_log_files

from tms.hudi.records.bounded_merge import BoundedMerge
from tms.hudi.records.merge import merge_records, scan_logs
from tms.hudi.records.merge_rules import MergeRules
from tms.hudi.records.schema import avro_to_arrow, with_meta_fields
from tms.hudi.storage.table_storage import LocalStorage

DATA_SCHEMA = {"type": "record", "name": "t", "fields": [
    {"name": "id", "type": "string"}, {"name": "ts", "type": ["null", "long"], "default": None},
    {"name": "v", "type": ["null", "string"], "default": None}]}
FULL = with_meta_fields(DATA_SCHEMA)
ARROW = avro_to_arrow(FULL)
PAD = "x" * 200  # wide rows: a tiny budget spills after a few records


def _rows(keys: list[int], ts: list[int | None], instant: str) -> pa.Table:
    n = len(keys)
    return pa.Table.from_pydict({
        "_hoodie_commit_time": [instant] * n, "_hoodie_commit_seqno": [f"{instant}_{i}" for i in range(n)],
        "_hoodie_record_key": [f"k{k:05d}" for k in keys], "_hoodie_partition_path": [""] * n,
        "_hoodie_file_name": ["f"] * n, "id": [f"k{k:05d}" for k in keys], "ts": ts,
        "v": [f"{instant}-{k}-{PAD}" for k in keys]}, schema=ARROW)


block = st.one_of(
    st.tuples(st.just("data"), st.lists(st.tuples(st.integers(0, 60), st.one_of(st.none(), st.integers(0, 5))),
                                        min_size=1, max_size=30, unique_by=lambda r: r[0])),
    st.tuples(st.just("delete"), st.lists(st.tuples(st.integers(0, 60), st.one_of(st.none(), st.integers(0, 5))),
                                          min_size=1, max_size=10, unique_by=lambda r: r[0])),
    st.tuples(st.just("rollback"), st.integers(0, 5)))


def _write_slice(root: Path, base_keys: list[int] | None, blocks: list) -> tuple[str | None, list[str]]:
    base = None
    if base_keys is not None:
        base = "base.parquet"
        pq.write_table(_rows(base_keys, [k % 4 for k in base_keys], "20240101000000000"), root / base,
                       row_group_size=7)
    logs = write_log_files(root, blocks, lambda arg, instant: _rows([k for k, _ in arg], [t for _, t in arg], instant),
                           lambda arg: [(f"k{k:05d}", "", t) for k, t in arg], DATA_SCHEMA, ["null", "long"])
    return base, logs


def _key_sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["_hoodie_record_key"], r["v"] or ""))


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base_keys=st.one_of(st.none(), st.lists(st.integers(0, 60), max_size=50, unique=True)),
       blocks=st.lists(block, min_size=1, max_size=8), ordering=st.sampled_from([None, "ts"]),
       budget=st.sampled_from([5_000, 50_000, 64 * 1024 * 1024]))
def test_bounded_merge_gives_the_in_memory_merges_rows(tmp_path_factory, base_keys, blocks, ordering, budget):
    root = tmp_path_factory.mktemp("slice")
    base, logs = _write_slice(root, base_keys, blocks)
    storage = LocalStorage(str(root))
    valid = lambda instant: True  # noqa: E731
    rules = MergeRules.of(ordering)
    expected = merge_records(pq.read_table(root / base) if base else None, scan_logs(storage, logs, valid, ARROW),
                             rules, ARROW)
    out: list[pa.Table] = []
    merge = BoundedMerge(storage, base, logs, valid, rules, ARROW, budget_bytes=budget)
    stats = merge.run(out.append)
    got = pa.concat_tables(out) if out else ARROW.empty_table()
    assert got.schema == ARROW
    assert _key_sorted(got) == _key_sorted(expected)
    assert stats.rows_written == expected.num_rows


def test_a_tiny_budget_spills_the_logs_to_several_buckets(tmp_path):
    base, logs = _write_slice(tmp_path, list(range(60)), [("data", [(k, 1) for k in range(60)])] * 3)
    merge = BoundedMerge(LocalStorage(str(tmp_path)), base, logs, lambda i: True, MergeRules.of("ts"), ARROW,
                        budget_bytes=1)
    stats = merge.run(lambda rows: None)
    assert stats.buckets > 1 and stats.spilled_bytes > 0 and stats.rows_written == 60


def test_blocks_bigger_than_the_budget_stream_and_give_the_in_memory_merges_rows(tmp_path):
    # an Avro then a Parquet block, each of ~700 KB, within a budget of 200 KB: read a batch at a time, spilled
    keys = list(range(3000))
    blocks = [("data", [(k, 2 - k % 3) for k in keys]), ("data", [(k, 1) for k in keys[::2]])]
    base, logs = _write_slice(tmp_path, keys[::3], blocks)
    storage = LocalStorage(str(tmp_path))
    expected = merge_records(pq.read_table(tmp_path / base), scan_logs(storage, logs, lambda i: True, ARROW),
                             MergeRules.of("ts"), ARROW)
    out: list[pa.Table] = []
    stats = BoundedMerge(storage, base, logs, lambda i: True, MergeRules.of("ts"), ARROW,
                         budget_bytes=200_000).run(out.append)
    assert stats.buckets > 1
    assert _key_sorted(pa.concat_tables(out)) == _key_sorted(expected)


if __name__ == "__main__":
    pytest.main([__file__])
