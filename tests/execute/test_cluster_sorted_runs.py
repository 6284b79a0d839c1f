"""Clustering a group beyond the memory budget by sorted runs (each file slice merged within the budget, runs
sorted and spilled, merged k ways) writes the same files, row for row and in the same order, as clustering it
in memory; and the k-way merge of spilled runs gives `sort_by`'s order whatever the runs and ties."""
import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from execute_support import ModelledTable, key, plan_clustering, rec

import tms.execute.clustering as clustering
from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.records.sorted_runs import SortedRuns
from tms.hudi.table.hudi_table import HudiTable

FILE_NAME = "_hoodie_file_name"


def _history(t: ModelledTable) -> None:
    t.write([rec(i, i % 4) for i in range(60)], "insert")  # ts 0-3: many ties in the sort column
    t.write([rec(i, 9) for i in range(0, 60, 4)] + [rec(i, 1, "older") for i in range(1, 60, 8)]
            + [rec(i, 2) for i in range(60, 70)])
    t.write([key(i) for i in range(2, 60, 9)], "delete")


def _output(path, ts) -> dict[str, list[list[dict]]]:
    """Per partition, the rows of each written file in write-stat order (file names aside)."""
    table = HudiTable.load(str(path))
    done = table.timeline.get(ts)
    assert done is not None and done.is_completed
    meta = table.timeline.commit_metadata(done)
    return {p: [pq.read_table(path / s.path).drop_columns([FILE_NAME]).to_pylist() for s in stats]
            for p, stats in meta.partition_to_write_stats.items()}


@pytest.mark.parametrize("sort_columns", ["ts", ""])
def test_clustering_by_sorted_runs_writes_the_in_memory_clusterings_files(tmp_path, monkeypatch, sort_columns):
    t = ModelledTable(tmp_path / "runs", "MERGE_ON_READ", 8, max_file_records=6)
    _history(t)
    shutil.copytree(tmp_path / "runs", tmp_path / "memory")
    # several files per group (the plan holds absolute paths: one plan per copy)
    ts = {name: plan_clustering(HudiTable.load(str(tmp_path / name)), sort_columns=sort_columns, target_bytes=4000)
          for name in ("runs", "memory")}
    runs_made = []
    spill = SortedRuns._spill

    def counting_spill(self):
        spill(self)
        runs_made.append(len(self.runs))
    monkeypatch.setattr(SortedRuns, "_spill", counting_spill)

    execute_instant(HudiTable.load(str(tmp_path / "memory")), ts["memory"], LocalRunner(1), budget_bytes=1 << 40)
    assert not runs_made, "the group fits the budget: clustered in memory"
    execute_instant(HudiTable.load(str(tmp_path / "runs")), ts["runs"], LocalRunner(1), budget_bytes=2000)
    assert max(runs_made) > 2, "a tiny budget: several sorted runs per group"

    t.check()  # the model's rows read back from the table clustered by sorted runs
    by_runs, in_memory = _output(tmp_path / "runs", ts["runs"]), _output(tmp_path / "memory", ts["memory"])
    assert all(len(files) > 1 for files in by_runs.values())
    assert {p: [len(f) for f in files] for p, files in by_runs.items()} == \
        {p: [len(f) for f in files] for p, files in in_memory.items()}
    if sort_columns:  # the same files, row for row
        assert by_runs == in_memory
        for files in by_runs.values():
            order = [(r["ts"], r["_hoodie_record_key"]) for f in files for r in f]
            assert order == sorted(order), "sorted by ts, ties by record key"
    else:  # in memory keeps the merge's order; sorted runs order by record key: the same rows
        def by_key(rows: list[dict]) -> list[dict]:
            return sorted(rows, key=lambda r: r["_hoodie_record_key"])
        for p, files in by_runs.items():
            rows = [r for f in files for r in f]
            assert rows == by_key(rows)
            assert rows == by_key([r for f in in_memory[p] for r in f])

def test_a_group_within_the_budget_is_clustered_in_memory_and_one_beyond_it_by_sorted_runs():
    task = clustering.ClusteringTask(None, "1", "", (clustering.InputSlice("f", "a.parquet", ()),), (), 1,
                                     1 << 30, "{}", None, budget_bytes=80 * 1024 * 1024)
    assert not clustering._by_sorted_runs(task, 10 * 1024 * 1024)
    assert clustering._by_sorted_runs(task, 11 * 1024 * 1024)


def test_sorted_runs_merge_to_sort_bys_order(tmp_path):
    rng = random.Random(7)
    for trial in range(40):
        n = rng.randint(0, 2000)
        rows = pa.table({
            "f": pa.array([rng.choice([None, float("nan"), 1.0, 2.0, rng.random()]) for _ in range(n)], pa.float64()),
            "s": pa.array([rng.choice([None, "x", "y", "é", str(rng.randint(0, 40))]) for _ in range(n)]),
            "i": pa.array(range(n))})
        columns = rng.choice([["f"], ["s"], ["f", "s"], ["s", "f"], []])
        spill_dir = tmp_path / str(trial)
        spill_dir.mkdir()
        runs = SortedRuns(rows.schema, columns, rng.choice([2000, 20000, 1 << 30]), str(spill_dir))
        start = 0
        while start < n:
            size = rng.randint(1, 300)
            runs.add(rows.slice(start, size))
            start += size
        got = list(runs.sorted_batches(rng.choice([1, 5000, None])))
        merged = pa.concat_tables(got) if got else rows.slice(0, 0)
        expected = rows.sort_by([(c, "ascending") for c in columns]) if columns else rows
        # repr: NaN equals NaN (Table.equals says it does not)
        assert repr(merged.to_pylist()) == repr(expected.to_pylist()), (trial, columns, len(runs.runs))
        runs.close()
        assert not list(spill_dir.iterdir())
