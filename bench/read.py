"""Snapshot read of a MOR table (~1M rows, 10% updated through log files): the project's reader beside
hudi-rs, in one run. Prints rows/s of both and the ratio (goal: ours >= 0.5x hudi-rs).

    .venv/bin/python bench/read.py [--rows 1000000] [--update-fraction 0.1] [--log-blocks avro|parquet]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from trips_table import build_trips_table

from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable


def read_ours(path: Path) -> int:
    return read_snapshot(HudiTable.load(str(path))).num_rows


def read_hudi_rs(path: Path) -> int:
    from hudi import HudiTableBuilder
    return sum(b.num_rows for b in HudiTableBuilder.from_base_uri(str(path)).build().read())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--update-fraction", type=float, default=0.1)
    ap.add_argument("--log-blocks", choices=["avro", "parquet"], default="avro")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_mor"
        t0 = time.perf_counter()
        build_trips_table(path, args.rows, args.update_fraction, log_blocks=args.log_blocks)
        print(f"built MOR v8 table: {args.rows} rows, {args.update_fraction:.0%} updated in {args.log_blocks} "
              f"log blocks, in {time.perf_counter() - t0:.1f} s")
        times: dict[str, list[float]] = {"tms": [], "hudi-rs": []}
        counts = {}
        for _ in range(args.repeat):  # interleaved, so both see the same machine state
            for name, fn in (("tms", read_ours), ("hudi-rs", read_hudi_rs)):
                t = time.perf_counter()
                counts[name] = fn(path)
                times[name].append(time.perf_counter() - t)
        assert counts["tms"] == counts["hudi-rs"] == args.rows, counts
        rate = {k: args.rows / statistics.median(v) for k, v in times.items()}
        for k in times:
            print(f"{k:8s} median {statistics.median(times[k]):.3f} s  {rate[k]:,.0f} rows/s")
        print(f"ratio tms/hudi-rs: {rate['tms'] / rate['hudi-rs']:.2f} (goal >= 0.5)")


if __name__ == "__main__":
    main()
