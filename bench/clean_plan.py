"""Clean planning on a table of many partitions: a full scan against Hudi's incremental mode
(`hoodie.cleaner.incremental.mode`), after a commit touching a few partitions (issue 37, item 2).

    .venv/bin/python bench/clean_plan.py [--partitions 3000] [--touched 10] [--repeat 3]

The table is a COPY_ON_WRITE v8 table of `--partitions` partitions, one file group each, synthesised on local
disk: four commits over every partition (instant files and empty base files written directly; planning reads
names and sizes, never the data), then a commit touching `--touched` partitions, then a clean run by TMS
(KEEP_LATEST_COMMITS, 1 commit retained: it deletes three versions in every partition), then another commit
touching the same partitions. The next clean's window holds only that one commit, so the incremental plan looks
at `--touched` partitions where the full one lists them all; both plan the same files (checked).

Each plan is made in a process of its own (the same command, `--measure`), timed around the planning call
(start-up and imports excluded), with the process's peak resident memory (ru_maxrss, imports included); then,
in another process, the peak of the memory Python allocated while planning (tracemalloc, which slows it, so
not timed). Each figure is the best of `--repeat` runs (the plan is removed after each). Prints both, and the
ratios incremental / full."""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from tms.execute.dispatch import execute_instant  # noqa: E402
from tms.execute.fencing import no_fence  # noqa: E402
from tms.execute.runner import LocalRunner  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.table.writer import HudiWriter  # noqa: E402
from tms.hudi.timeline.instant import Action, Instant, State, instant_file_name, new_instant_time  # noqa: E402
from tms.hudi.timeline.serde import (  # noqa: E402
    CommitMetadata,
    WriteStat,
    parse_cleaner_plan,
    serialize_commit_metadata,
)
from tms.planning.clean import plan_clean_or_why  # noqa: E402
from tms.planning.planned import Planned  # noqa: E402
from tms.planning.policy import TablePolicy  # noqa: E402

VERSION = 8
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("city", pa.string())])
POLICY = {"hoodie.cleaner.commits.retained": 1, "tms.clean.max.files.per.plan": 0}


class Synthesiser:
    """Writes commits straight into a table: an empty base file per partition it touches, and the instant."""

    def __init__(self, base: Path, partitions: int):
        HudiWriter.create_table(str(base), table_type="COPY_ON_WRITE", version=VERSION, key=["id"],
                                ordering=["ts"], partition=["city"], schema=SCHEMA)
        self.base = base
        self.table = HudiTable.load(str(base))
        self.timeline_dir = base / self.table.config.timeline_dir
        self.partitions = [f"city=p{n:06d}" for n in range(partitions)]
        self.file_ids = {p: f"{uuid.uuid4()}-0" for p in self.partitions}
        self.clock = datetime.now(UTC) - timedelta(hours=1)
        for p in self.partitions:
            (base / p).mkdir()
            (base / p / ".hoodie_partition_metadata").write_text("commitTime=0\npartitionDepth=1\n")

    def _tick(self) -> str:
        self.clock += timedelta(milliseconds=5)
        return new_instant_time(self.table.config.timeline_zone, self.clock)

    def commit(self, partitions: list[str]) -> str:
        ts = self._tick()
        stats = {}
        for p in partitions:
            name = f"{self.file_ids[p]}_0-0-0_{ts}.parquet"
            (self.base / p / name).write_bytes(b"")
            stats[p] = [WriteStat(file_id=self.file_ids[p], path=f"{p}/{name}", partition_path=p, num_writes=1)]
        meta = serialize_commit_metadata(CommitMetadata(partition_to_write_stats=stats, operation_type="UPSERT"),
                                         VERSION)
        done = self._tick()
        for inst, content in ((Instant(ts, State.REQUESTED, Action.COMMIT), b""),
                              (Instant(ts, State.INFLIGHT, Action.COMMIT), b""),
                              (Instant(ts, State.COMPLETED, Action.COMMIT, done), meta)):
            (self.timeline_dir / instant_file_name(inst, VERSION)).write_bytes(content)
        return ts


def build(base: Path, partitions: int, touched: int) -> None:
    synth = Synthesiser(base, partitions)
    for _ in range(4):
        synth.commit(synth.partitions)
    few = synth.partitions[:: max(1, partitions // touched)][:touched]
    synth.commit(few)
    planned = plan_clean_or_why(HudiTable.load(str(base)), TablePolicy.from_stored(POLICY), datetime.now(UTC))
    assert isinstance(planned, Planned), planned
    execute_instant(HudiTable.load(str(base)), planned.instant, LocalRunner(), no_fence)
    synth.commit(few)


def measure(base: str, incremental: bool, traced: bool) -> None:
    """One plan in this process: prints its time (or, `traced`, the peak of the memory Python allocated while
    planning), the process's peak memory and the plan's files as JSON; removes the plan."""
    table = HudiTable.load(base)
    policy = TablePolicy.from_stored({**POLICY, "hoodie.cleaner.incremental.mode": incremental})
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    planned = plan_clean_or_why(table, policy, datetime.now(UTC))
    seconds = time.perf_counter() - start
    allocated = tracemalloc.get_traced_memory()[1] if traced else 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert isinstance(planned, Planned), planned
    plan = parse_cleaner_plan(table.timeline.read_plan(planned.instant))
    files = sorted(i.file_path or "" for infos in plan.file_paths_to_be_deleted_per_partition.values() for i in infos)
    table.timeline.delete_pending(planned.instant)
    print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "allocated_mb": allocated / 2**20,
                      "files": files}))


def run(base: Path, incremental: bool) -> dict:
    """A timed plan and a traced one, each in a process of its own."""
    def once(*flags: str) -> dict:
        out = subprocess.run([sys.executable, __file__, "--measure", str(base), *flags], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    flags = ["--incremental"] if incremental else []
    timed, traced = once(*flags), once(*flags, "--traced")
    assert timed["files"] == traced["files"]
    return {**timed, "allocated_mb": traced["allocated_mb"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--touched", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--incremental", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.incremental, args.traced)
        return
    with tempfile.TemporaryDirectory(prefix="tms-clean-bench-") as tmp:
        base = Path(tmp) / "t"
        started = time.perf_counter()
        build(base, args.partitions, args.touched)
        print(f"table: {args.partitions} partitions, a commit touching {args.touched} of them "
              f"(built in {time.perf_counter() - started:.1f} s)")
        results: dict[str, list[dict]] = {"full": [], "incremental": []}
        for _ in range(args.repeat):  # interleaved: a shared machine is noisy
            results["full"].append(run(base, False))
            results["incremental"].append(run(base, True))
        best = {}
        for kind, runs in results.items():
            assert all(r["files"] == runs[0]["files"] for r in runs)
            best[kind] = {k: min(r[k] for r in runs) for k in ("seconds", "peak_mb", "allocated_mb")}
            print(f"{kind:12s} plan: {best[kind]['seconds'] * 1000:8.1f} ms, allocated while planning "
                  f"{best[kind]['allocated_mb']:7.2f} MB at most, process peak RSS {best[kind]['peak_mb']:6.1f} MB, "
                  f"{len(runs[0]['files'])} files")
        assert results["full"][0]["files"] == results["incremental"][0]["files"], "the two plans differ"
        inc, full = best["incremental"], best["full"]
        print(f"incremental / full: time {inc['seconds'] / full['seconds']:.3f}x, allocated memory "
              f"{inc['allocated_mb'] / full['allocated_mb']:.3f}x, "
              f"process peak RSS {inc['peak_mb'] / full['peak_mb']:.3f}x")


if __name__ == "__main__":
    main()
