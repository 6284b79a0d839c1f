"""A big plan runs in parts cut by bytes (tms.execute.parts), each part a Spark task that Spark attempts again
alone when it fails: the cut itself (property test), the runner on the shared Spark context (a local[2,2]
master: two attempts of a task), the plain Python runner's attempts of a failed task, and a compaction of which
one part fails once and still completes on either runner, with the failed attempt's file deleted and hudi-rs
reading the model."""
from __future__ import annotations

from pathlib import Path

import pytest
from execute_support import ModelledTable, plan_compaction, rec, write_history
from hypothesis import given
from hypothesis import strategies as st

from jobs.spark_runner import SparkRunner
from tms.execute.dispatch import execute_instant
from tms.execute.errors import UnsafePlanError
from tms.execute.parts import MIN_OPERATION_BYTES, cut_into_parts
from tms.execute.runner import LocalRunner
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.timeline.serde import parse_compaction_plan

MB = 1024 * 1024


@given(st.lists(st.integers(0, 50 * MB), max_size=60), st.integers(MB, 40 * MB), st.integers(1, 8))
def test_parts_keep_every_operation_in_order_within_their_budget(sizes, part_bytes, parallelism):
    parts = cut_into_parts(sizes, part_bytes, parallelism)
    assert [i for part in parts for i in part] == list(range(len(sizes)))
    weights = [max(s, MIN_OPERATION_BYTES) for s in sizes]
    budget = min(part_bytes, -(-sum(weights) // parallelism)) if sizes else 0
    for part, following in zip(parts, [*parts[1:], None], strict=False):
        assert len(part) > 0
        held = sum(weights[i] for i in part)
        assert held <= budget or len(part) == 1, "a part over its budget is one operation alone"
        if following is not None:  # a part ends only where the next operation would take it over its budget
            assert held + weights[following[0]] > budget


def test_a_small_plan_uses_every_task_slot_and_a_big_one_is_cut_by_bytes():
    assert len(cut_into_parts([MB] * 6, 1024 * MB, parallelism=2)) == 2
    assert [len(p) for p in cut_into_parts([300 * MB] * 10, 1024 * MB, parallelism=2)] == [3, 3, 3, 1]
    assert len(cut_into_parts([0] * 100_000, 1024 * MB, parallelism=64)) == 98  # placeholders count 1 MB each
    assert cut_into_parts([5000 * MB, MB], 1024 * MB) == [range(0, 1), range(1, 2)]


def _attempts(folder: Path) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for f in sorted(folder.iterdir()):
        task, attempt = map(int, f.name.split("-"))
        out.setdefault(task, []).append(attempt)
    return out


def test_a_failed_part_is_attempted_again_alone(tmp_path, spark):
    seen = tmp_path / "seen"
    seen.mkdir()
    record = str(seen)

    def flaky(task: int, token: str) -> tuple[int, str]:
        from pyspark import TaskContext
        attempt = TaskContext.get().attemptNumber()
        Path(record, f"{task}-{attempt}").touch()
        if task == 4 and attempt == 0:
            raise RuntimeError("a lost executor")
        return task * 10, token

    results = SparkRunner(spark.sparkContext, part_bytes=3 * MB).map(flaky, list(range(6)), "parts", [MB] * 6)

    assert [r for r, _ in results] == [0, 10, 20, 30, 40, 50]
    assert _attempts(seen) == {0: [0], 1: [0], 2: [0], 3: [0, 1], 4: [0, 1], 5: [1]}, \
        "only the failed part (tasks 3 to 5, in order) ran again"
    assert len({token for _, token in results[3:]}) == 1 and results[0][1] != results[3][1]


def test_the_python_runner_attempts_a_failed_task_again_alone():
    calls: list[tuple[int, str]] = []

    def flaky(task: int, token: str) -> int:
        calls.append((task, token))
        if task == 2 and token.endswith("-0"):
            raise OSError("a storage request timed out")
        return task * 10

    assert LocalRunner(2, attempts=3).map(flaky, list(range(4)), "tasks") == [0, 10, 20, 30]
    assert sorted(calls) == [(0, "0-0-0"), (1, "1-0-0"), (2, "2-0-0"), (2, "2-0-1"), (3, "3-0-0")]

    def always(task: int, token: str) -> int:
        raise OSError(f"down ({token})")

    with pytest.raises(OSError, match=r"down \(0-0-2\)"):  # the last of its 3 attempts fails the map
        LocalRunner(1, attempts=3).map(always, [0], "tasks")
    refused: list[str] = []

    def unsafe(task: int, token: str) -> int:
        refused.append(token)
        raise UnsafePlanError("a path outside the table")

    with pytest.raises(UnsafePlanError):
        LocalRunner(1, attempts=3).map(unsafe, [0], "tasks")
    assert refused == ["0-0-0"], "TMS's own refusals are not attempted again"


@pytest.mark.parametrize("runner", ["spark", "python"])
def test_a_compaction_whose_part_fails_once_completes_on_its_retry(tmp_path, request, runner):
    t = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    write_history(t)
    tc = plan_compaction(t.table())
    ops = parse_compaction_plan(t.table().timeline.read_plan(tc)).operations
    assert len(ops) >= 2
    failing = ops[-1].file_id

    class FailingOnce:
        """The runner (the shared Spark context's, or the plain Python one), with one compaction operation failing
        on its part's first attempt after it has written its base file (as an executor lost mid-part)."""

        def __init__(self):
            if runner == "spark":  # each operation a part alone
                self.runner = SparkRunner(request.getfixturevalue("spark").sparkContext, part_bytes=MB)
            else:
                self.runner = LocalRunner(2, attempts=2)

        def map(self, fn, tasks, description, sizes=None):
            def once(task, token):
                out = fn(task, token)
                if task.file_id == failing and first_attempt(token):
                    raise RuntimeError("the executor was lost after its write")
                return out
            return self.runner.map(once, tasks, description, sizes)

    def first_attempt(token: str) -> bool:
        if runner == "python":
            return token.endswith("-0")
        from pyspark import TaskContext
        return TaskContext.get().attemptNumber() == 0

    execute_instant(t.table(), tc, FailingOnce())

    t.check()  # hudi-rs and TMS's reader read the model's rows
    table = t.table()
    stats = table.timeline.commit_metadata(table.timeline.get(tc)).write_stats()
    assert {s.file_id for s in stats} == {op.file_id for op in ops}
    for op in ops:
        written = [f.name for f in (tmp_path / "t" / op.partition_path).iterdir()
                   if f.name.endswith(".parquet") and BaseFileName.parse(f.name).instant == tc
                   and BaseFileName.parse(f.name).file_id == op.file_id]
        assert len(written) == 1, f"the failed attempt's base file of {op.file_id} is deleted: {written}"
    t.write([rec(i, 60) for i in range(5)])
    t.check()
