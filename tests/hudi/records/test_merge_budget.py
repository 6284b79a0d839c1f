"""The merge's memory budget: the job's option wins over the table's property, which wins over TMS's default;
Hudi's fraction applies where no maximum is set and the executor's memory is known; a malformed value is
refused in one line."""
import pytest

from tms.hudi.records.merge_budget import FRACTION, MAX_SIZE, MIN_BYTES, MergeBudgetError, merge_budget_bytes

MB = 1024 * 1024


def test_the_option_wins_then_the_table_then_the_default():
    table = {MAX_SIZE: str(512 * MB)}
    assert merge_budget_bytes({MAX_SIZE: str(64 * MB)}, table, default=256 * MB) == 64 * MB
    assert merge_budget_bytes({}, table, default=256 * MB) == 512 * MB
    assert merge_budget_bytes({}, {}, default=100 * MB) == 100 * MB
    assert merge_budget_bytes({MAX_SIZE: "1"}, {}) == MIN_BYTES, "at least the minimum"


def test_the_fraction_of_the_executors_memory_where_no_maximum_is_set():
    assert merge_budget_bytes({FRACTION: "0.5"}, {}, default=256 * MB, executor_memory_bytes=2048 * MB) == 1024 * MB
    assert merge_budget_bytes({FRACTION: "0.5"}, {}, default=256 * MB) == 256 * MB, "no executor memory known"
    assert merge_budget_bytes({FRACTION: "0.5", MAX_SIZE: str(32 * MB)}, {},
                              executor_memory_bytes=2048 * MB) == 32 * MB


@pytest.mark.parametrize("options", [{MAX_SIZE: "lots"}, {MAX_SIZE: "-5"}, {FRACTION: "1.5"}])
def test_a_malformed_value_is_refused(options):
    with pytest.raises(MergeBudgetError, match="hoodie.memory.compaction"):
        merge_budget_bytes(options, {}, executor_memory_bytes=1024 * MB)
