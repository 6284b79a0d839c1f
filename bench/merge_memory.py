"""Peak memory and time of compacting one file group (a base file and log files updating every row) of 64 MB,
256 MB and 1 GB on storage: the merge within the default budget (`BoundedMerge`, hoodie.memory.compaction.max.size
or TMS_MERGE_MEMORY_BYTES, 256 MB) beside today's in-memory merge (`compact_in_memory`) where it fits. Each
compaction runs in a process of its own (`CompactionExecutor` and `compact_file_group`, as a Python worker runs
them); its peak is the process's VmHWM. Each merge runs `--repeat` times (default 2), the two alternating which
goes first, and the fastest run of each counts. Prints the figures and the ratios: peak 1 GB / 64 MB (goal <= 1.5)
and the bounded merge's time per byte over today's (goal <= 1.2).

    .venv/bin/python bench/merge_memory.py                       # 64 MB, 256 MB and 1 GB (several minutes)
    .venv/bin/python bench/merge_memory.py --sizes 64 --budget-mb 64
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import CompactionOperation, CompactionPlan, serialize_compaction_plan

MB = 1024 * 1024
ROW_BYTES = 75  # about what one row takes on storage (random text does not compress)
LOG_FILES = 4

COMPACT = """
import json, re, sys, time
from tms.execute import compaction
from tms.execute.fencing import no_fence
from tms.hudi.table.hudi_table import HudiTable
path, instant, mode, budget = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
table = HudiTable.load(path)
executor = compaction.CompactionExecutor(table, table.timeline.get(instant))
executor.budget_bytes = budget
started = time.perf_counter()
for n, task in enumerate(executor.start(no_fence)):
    stat = (compaction.compact_file_group if mode == "bounded" else compaction.compact_in_memory)(task, f"0-0-{n}")
seconds = time.perf_counter() - started
status = open("/proc/self/status").read()  # VmHWM: this process's own peak
print(json.dumps({"peak_mb": int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024, "seconds": seconds,
                  "rows": stat.num_writes, "path": stat.path}))
"""


def _text(rng: np.random.Generator, rows: int, width: int) -> pa.Array:
    """`rows` random strings of `width` letters, built from buffers (fast for millions of rows)."""
    data = (rng.integers(0, 26, rows * width, dtype=np.uint8) + ord("a")).tobytes()
    offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])


def build_file_group(path: Path, group_bytes: int, log_files: int = LOG_FILES) -> tuple[str, int]:
    """A MOR table of one file group of about `group_bytes`: a base file, then `log_files` delta commits each
    updating every row (parquet log blocks); a compaction planned over it. Returns (instant, bytes planned)."""
    rows = max(1000, group_bytes // ROW_BYTES // (1 + log_files))
    rng = np.random.default_rng(7)

    def records(ts: int) -> pa.Table:
        return pa.table({"uuid": pa.array([f"trip-{i:09d}" for i in range(rows)]),
                         "ts": pa.array(np.full(rows, ts), pa.int64()),
                         "rider": _text(rng, rows, 24), "note": _text(rng, rows, 40),
                         "fare": pa.array(rng.uniform(5, 90, rows))})

    writer = HudiWriter.create_table(str(path), table_type="MERGE_ON_READ", version=8, key=["uuid"],
                                     ordering=["ts"], partition=[], schema=records(0).schema,
                                     log_block_format="parquet", max_file_records=rows * 2)
    writer.write(records(1), "insert")
    for n in range(log_files):
        HudiWriter(HudiTable.load(str(path)), log_block_format="parquet",
                   max_file_records=rows * 2).write(records(2 + n), "upsert")
    table = HudiTable.load(str(path))
    slices = [fs for fs in table.file_system_view().latest_slices() if fs.log_files]
    if len(slices) != 1:
        raise SystemExit(f"{len(slices)} file groups were written, not one")
    fs = slices[0]
    plan = CompactionPlan(operations=[CompactionOperation(
        base_instant_time=fs.base_instant, file_id=fs.file_id, partition_path=fs.partition,
        data_file_path=fs.base_file.file_name if fs.base_file else None,
        delta_file_paths=[f.file_name for f in fs.log_files])])
    instant = table.timeline.create_requested(Action.COMPACTION, serialize_compaction_plan(plan)).timestamp
    return instant, fs.base_size + fs.log_bytes


def compact(path: Path, instant: str, mode: str, budget: int, *, keep: bool = False) -> dict:
    """Compact in a process of its own; its peak memory, time and rows. Unless `keep`, the output is removed
    after and the plan is requested again."""
    done = subprocess.run([sys.executable, "-c", COMPACT, str(path), instant, mode, str(budget)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {mode} compaction failed:\n{done.stderr[-3000:]}")
    result: dict = json.loads(done.stdout.splitlines()[-1])
    out = path / result["path"]
    result["output_mb"] = out.stat().st_size / MB
    if keep:
        return result
    out.unlink()
    for marker in (path / ".hoodie" / ".temp").rglob("*"):
        if marker.is_file():
            marker.unlink()
    timeline = path / HudiTable.load(str(path)).config.timeline_dir  # back to the requested plan
    for f in timeline.iterdir():
        if f.name.startswith(instant) and not f.name.endswith(".requested"):
            f.unlink()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256,1024", help="file group sizes in MB")
    ap.add_argument("--budget-mb", type=int, default=256, help="the merge's budget (default: TMS's default)")
    ap.add_argument("--today-up-to-mb", type=int, default=256, help="largest group today's merge is run on")
    ap.add_argument("--repeat", type=int, default=2,
                    help="runs of each merge, alternating (the fastest counts: the machine's noise only slows)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    budget = args.budget_mb * MB
    print(f"budget {args.budget_mb} MB; one file group: a base file and {LOG_FILES} log files updating every row")
    print(f"{'group':>8} {'on storage':>11} {'bounded peak':>13} {'bounded s':>10} {'today peak':>11} "
          f"{'today s':>8} {'time/byte bounded/today':>24}")
    peaks: dict[int, float] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="tms-merge-bench-") as tmp:
            path = Path(tmp) / "t"
            started = time.perf_counter()
            instant, planned = build_file_group(path, size * MB)
            built = time.perf_counter() - started
            modes = ["bounded", "today"] if size <= args.today_up_to_mb else ["bounded"]
            runs: dict[str, list[dict]] = {mode: [] for mode in modes}
            for n in range(args.repeat):
                for mode in modes if n % 2 == 0 else modes[::-1]:
                    runs[mode].append(compact(path, instant, mode, budget))
            bounded = min(runs["bounded"], key=lambda r: r["seconds"])
            today = min(runs["today"], key=lambda r: r["seconds"]) if "today" in runs else None
            if today is not None and today["rows"] != bounded["rows"]:
                raise SystemExit(f"rows differ: bounded {bounded['rows']}, today {today['rows']}")
            peaks[size] = bounded["peak_mb"]
            ratio = f"{bounded['seconds'] / today['seconds']:.2f}" if today else "-"
            today_peak = f"{today['peak_mb']:.0f}MB" if today else "not run"
            today_s = f"{today['seconds']:.1f}" if today else "-"
            print(f"{size:>6}MB {planned / MB:>9.0f}MB {bounded['peak_mb']:>11.0f}MB {bounded['seconds']:>10.1f} "
                  f"{today_peak:>11} {today_s:>8} {ratio:>24}   (built in {built:.0f} s, {bounded['rows']} rows)",
                  flush=True)
    if len(peaks) > 1:
        small, large = min(peaks), max(peaks)
        print(f"peak {large} MB / {small} MB: {peaks[large] / peaks[small]:.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
