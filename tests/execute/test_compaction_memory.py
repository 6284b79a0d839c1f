"""A compaction within a memory budget (hoodie.memory.compaction.max.size) peaks at what the budget implies, not
at what the file group's size does, and writes the rows the in-memory merge reads: one file group (a base file
and four log files each updating every row) compacted in a process of its own with a budget far below what
today's merge of it takes, its peak measured (VmHWM)."""
import pyarrow.parquet as pq
import pytest

from bench.merge_memory import MB, build_file_group, compact
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from worker.sizing import python_task_memory_mb

BUDGET = 64 * MB


@pytest.mark.slow
def test_a_compaction_within_a_budget_peaks_at_what_the_budget_implies(tmp_path):
    path = tmp_path / "t"
    instant, planned = build_file_group(path, 40 * MB)
    expected = read_snapshot(HudiTable.load(str(path)))  # the in-memory merge of the slice

    result = compact(path, instant, "bounded", BUDGET, keep=True)

    bound = python_task_memory_mb(planned, BUDGET)
    assert bound < python_task_memory_mb(planned) / 2, "the budget is what bounds it, not the group's size"
    assert result["peak_mb"] <= bound, f"{planned / MB:.0f} MB within {BUDGET // MB} MB: {result['peak_mb']:.0f} MB"
    written = pq.read_table(path / result["path"]).drop_columns(["_hoodie_file_name"])
    by_key = lambda t: t.sort_by("_hoodie_record_key").to_pylist()  # noqa: E731
    assert by_key(written) == by_key(expected.drop_columns(["_hoodie_file_name"]).select(written.column_names))
