"""Fresh `tms up` starts in a row (3 on CI, in the second pytest: they mostly wait; TMS_TEST_UP_STARTS=20 for a
soak) — each on a new data directory, so each creates its embedded PostgreSQL — reach a completed compaction
and leave no process behind. Before the parent made the database ready once, the roles raced to create it and
a third of fresh starts never ran a task.

The jobs run in plain Python (TMS_WORKER_RUNNER=python) unless TMS_TEST_UP_RUNNER=spark: what is proven here
is the start; tests/worker/test_worker_up.py runs `tms up` with Spark."""
from __future__ import annotations

import os
import re
import time

import pytest
from up_support import UpProcess, clean_env, processes_naming

STARTS = int(os.environ.get("TMS_TEST_UP_STARTS", "3"))


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.timeout(900)
@pytest.mark.parametrize("start", range(1, STARTS + 1))
def test_a_fresh_start_reaches_a_completed_compaction(tmp_path, data_dir, start):
    env = clean_env(tmp_path / "run", TMS_WORKER_RUNNER=os.environ.get("TMS_TEST_UP_RUNNER", "python"))
    began = time.monotonic()
    up = UpProcess(data_dir, env, "--commits", "3", "--interval", "0.5")
    try:
        code = up.wait(timeout=800)
    finally:
        up.kill()
    took = time.monotonic() - began
    print(f"fresh start {start}/{STARTS}: exit {code} in {took:.0f} s")
    assert code == 0, up.output
    assert re.search(r"task \d+ \(table trips\): compaction \d{17} SUCCEEDED", up.output), up.output
    assert not re.search(r"task \d+ \(table [^)]+\): \w+ \d{17} FAILED", up.output), up.output
    assert (data_dir / "postgres" / "PG_VERSION").exists(), "the embedded PostgreSQL was created"
    assert not processes_naming(str(data_dir)), processes_naming(str(data_dir))
