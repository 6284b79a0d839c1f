"""Incremental compaction planning (issue 37, items 1 and 4): a MERGE_ON_READ v8 table of N partitions (default
3,000, one file group each), written by TMS's writer (an insert, then `--deltas` delta commits over every
partition); the first compaction plan (a full pass: no compaction before it), its execution (TMS's executor,
in this process), one delta commit touching `--touched` partitions (default 10), then the next plan, both
incremental (TMS_PLANNER_FULL_PASS_HOURS's default) and as a full pass. Each plan is timed on a table loaded
afresh (no process start-up: the issue's `tms schedule` figures include 2.15 s of it), with its storage
requests (the storage layer's calls: listings, reads, existence and size checks). Prints the figures and the
ratio next plan / first plan (the issue's figures before: 6.84 s and 3.74 s, 4.69 s and 1.59 s net of start-up,
0.34x; goal: <= 0.25x, and <= 0.05x at 100,000 partitions).

    .venv/bin/python bench/incremental_plan.py [--partitions 3000] [--deltas 4] [--touched 10] [--dir PATH]
"""
from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from storage_requests import REQUESTS, count_requests  # noqa: E402

from tms.execute.dispatch import execute_instant  # noqa: E402
from tms.execute.fencing import no_fence  # noqa: E402
from tms.execute.runner import LocalRunner  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.table.writer import create_table_for_records  # noqa: E402
from tms.hudi.timeline.instant import State  # noqa: E402
from tms.hudi.timeline.serde import parse_compaction_plan  # noqa: E402
from tms.planning.compaction import plan_compaction  # noqa: E402
from tms.planning.policy import TablePolicy  # noqa: E402

FULL_PASS_EVERY = timedelta(hours=24)  # TMS_PLANNER_FULL_PASS_HOURS's default


def _rows(partitions: range, ts: int) -> list[dict[str, Any]]:
    return [{"id": n, "name": f"n{n}-{ts}", "ts": ts, "city": f"p{n:05d}"} for n in partitions]


def _plan(path: Path, full_pass_every: timedelta | None) -> tuple[float, int, str, int]:
    """Time one compaction plan on the table loaded afresh: seconds, storage requests, instant, operations."""
    table = HudiTable.load(str(path))
    REQUESTS.clear()
    start = time.perf_counter()
    planned = plan_compaction(table, TablePolicy(), datetime.now(UTC), force=True, full_pass_every=full_pass_every)
    seconds = time.perf_counter() - start
    if planned is None:
        raise SystemExit("nothing was planned")
    ops = len(parse_compaction_plan(table.timeline.read_plan(planned.instant)).operations)
    return seconds, sum(REQUESTS.values()), planned.instant, ops


def _drop(path: Path, instant: str) -> None:
    table = HudiTable.load(str(path))
    table.storage.delete(table.timeline.path_of(table.timeline.states_of(instant)[State.REQUESTED]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=3000)
    ap.add_argument("--deltas", type=int, default=4, help="delta commits over every partition before the first plan")
    ap.add_argument("--touched", type=int, default=10, help="partitions the delta commit after the first plan writes")
    ap.add_argument("--dir", type=Path, help="where to build the table (default: a scratch folder, removed after)")
    args = ap.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="tms-incremental-plan-"))
    path = root / "t"
    try:
        start = time.perf_counter()
        everything = range(args.partitions)
        writer = create_table_for_records(str(path), _rows(range(1), 0), table_type="MERGE_ON_READ", version=8,
                                          key=["id"], ordering=["ts"], partition=["city"])
        writer.write(_rows(everything, 0), "insert")
        for ts in range(1, args.deltas + 1):
            writer.write(_rows(everything, ts))
        print(f"table: {args.partitions} partitions, 1 insert + {args.deltas} delta commits, built in "
              f"{time.perf_counter() - start:.1f} s")
        count_requests()
        first_s, first_req, first, first_ops = _plan(path, FULL_PASS_EVERY)
        print(f"first plan (full pass):          {first_s:7.2f} s {first_req:7d} requests {first_ops:6d} operations")
        start = time.perf_counter()
        execute_instant(HudiTable.load(str(path)), first, LocalRunner(), no_fence)
        print(f"its execution: {time.perf_counter() - start:.1f} s")
        step = max(1, args.partitions // args.touched)
        writer.write(_rows(range(0, args.partitions, step)[:args.touched], args.deltas + 1))
        full_s, full_req, full, full_ops = _plan(path, None)
        _drop(path, full)
        next_s, next_req, _, next_ops = _plan(path, FULL_PASS_EVERY)
        print(f"next plan as a full pass:        {full_s:7.2f} s {full_req:7d} requests {full_ops:6d} operations")
        print(f"next plan (incremental):         {next_s:7.2f} s {next_req:7d} requests {next_ops:6d} operations")
        print(f"peak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
        print(f"RATIO next plan / first plan: {next_s / first_s:.3f} in time (goal <= 0.25), "
              f"{next_req / first_req:.4f} in storage requests; next incremental / next full: "
              f"{next_s / full_s:.3f} in time, {next_req / full_req:.4f} in requests")
        return 0
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
