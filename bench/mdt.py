"""The cost of keeping a metadata table (MDT) in sync: a compaction of a MOR trips table with an MDT (files,
column_stats, record_index) beside the same compaction of the same table without one, in one run, both
in-process (LocalRunner). Prints the overhead ratio (goal <= 1.15), the time of the MDT delta commit
itself (measured inside the compaction: the overhead free of the noise between two runs) and the MDT bytes
written per data file the compaction changed; each time is the fastest of --repeat interleaved rounds (a
shared machine is noisy).

    .venv/bin/python bench/mdt.py                                   # 2M rows, 16 file groups
    .venv/bin/python bench/mdt.py --rows 200000 --file-rows 25000   # a quick run
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from compaction import plan_compaction, undo_compaction
from trips_table import build_trips_table

import tms.execute.compaction as compaction_executor
from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.table.hudi_table import HudiTable

PARTITIONS = ["files", "column_stats", "record_index"]


def mdt_bytes_of(path: Path, instant: str) -> int:
    """Bytes of the MDT log files the delta commit `instant` wrote."""
    mdt = path / ".hoodie" / "metadata"
    return sum(f.stat().st_size for f in mdt.rglob(f".*_{instant}.log.*"))


SYNC_SECONDS: list[float] = []


def _timed_sync(table, instant, action, metadata):
    started = time.perf_counter()
    _sync(table, instant, action, metadata)
    if table.config.get("hoodie.table.metadata.partitions"):   # the table without an MDT syncs nothing
        SYNC_SECONDS.append(time.perf_counter() - started)


_sync = compaction_executor.write_metadata_commit
compaction_executor.write_metadata_commit = _timed_sync   # measure the MDT delta commit inside the compaction


def run(path: Path, instant: str, runner: LocalRunner) -> tuple[float, int]:
    started = time.perf_counter()
    result = execute_instant(HudiTable.load(str(path)), instant, runner)
    return time.perf_counter() - started, result.files_written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--file-rows", type=int, default=125_000)
    ap.add_argument("--update-fraction", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()
    runner = LocalRunner(args.parallelism)
    with tempfile.TemporaryDirectory(prefix="tms-bench-mdt-") as tmp:
        plain, with_mdt = Path(tmp) / "plain", Path(tmp) / "mdt"
        t0 = time.perf_counter()
        build_trips_table(plain, args.rows, args.update_fraction, file_rows=args.file_rows)
        build_trips_table(with_mdt, args.rows, args.update_fraction, file_rows=args.file_rows, metadata=PARTITIONS)
        print(f"built two tables of {args.rows} rows in {time.perf_counter() - t0:.1f} s")
        plans = {p: plan_compaction(p)[0] for p in (plain, with_mdt)}
        pristine = Path(tmp) / "mdt-pristine"  # the MDT table as planned, restored after each round
        shutil.copytree(with_mdt, pristine)
        best = {plain: float("inf"), with_mdt: float("inf")}
        files_changed = mdt_bytes = 0
        for r in range(args.repeat):
            for path in (plain, with_mdt):
                instant = plans[path]
                elapsed, files_changed = run(path, instant, runner)
                best[path] = min(best[path], elapsed)
                if path == with_mdt:
                    mdt_bytes = mdt_bytes_of(path, instant)
                    shutil.rmtree(path)  # for the next round: the table and its MDT as they were planned
                    shutil.copytree(pristine, path)
                else:
                    undo_compaction(path, instant)
            print(f"round {r + 1}: without MDT {best[plain]:.2f} s, with MDT {best[with_mdt]:.2f} s (best so far)")
        ratio = best[with_mdt] / best[plain]
        sync = min(SYNC_SECONDS)
        print(f"compaction without MDT: {best[plain]:.2f} s; with MDT (files, column_stats, record_index): "
              f"{best[with_mdt]:.2f} s")
        print(f"overhead ratio {ratio:.3f} (goal <= 1.15)")
        print(f"the MDT delta commit alone (measured inside the compaction): {sync:.2f} s, "
              f"{sync / best[plain]:.1%} of the compaction without MDT: ratio {(best[plain] + sync) / best[plain]:.3f}")
        print(f"MDT bytes written per data file changed: {mdt_bytes / max(1, files_changed):.0f} "
              f"({mdt_bytes} bytes for {files_changed} base files)")


if __name__ == "__main__":
    main()
