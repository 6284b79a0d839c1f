"""Compaction of a MOR table (about 500 MB of base files, 10% of the rows updated in log files) by the Spark
job (`spark-submit jobs/run.py`), beside, in the same run:
  (a) a peer lower bound: hudi-rs reading the same snapshot and pyarrow writing it as parquet;
  (b) the job's Spark startup alone: spark-submit of a script that starts Spark and runs one task that
      imports the executor, then stops;
  (c) the same plan on a warm engine (worker/warm_engine.py: one long-running Spark application with as many
      single-core executors as the machine has cores, started once before the rounds), handed over its socket;
  (d) the real peer: the same plan executed by Hudi's own Java compaction on Spark (`CALL run_compaction(op =>
      'run', ...)` in a warm Spark 3.5 session with the Hudi release that writes the table version, the Java
      harness of tests/hudi_java, installed by `./dev test`; skipped with --no-java).
Prints MB/s (plan input: base + log bytes), the ratios job/(a) (goal <= 1.5) and warm/(a) (goal <= 1.2), the
startup share of the job, and TMS / Hudi: job/(d) (goal <= 1.0) and warm/(d) (goal <= 0.6); each time is the
fastest of --repeat interleaved rounds (a shared machine is noisy). The peak memory of each is the largest
resident size of its process tree (sampled every 50 ms) over its rounds; (c) and (d) are long-running
processes, whose peak includes what they hold between plans.

    .venv/bin/python bench/compaction.py                       # ~500 MB: 20M rows, 12 file groups
    .venv/bin/python bench/compaction.py --rows 1000000 --file-rows 150000    # a quick run
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pyarrow.parquet as pq
from trips_table import build_trips_table

from tms.execute.spark_submit import (
    DRIVER_JAVA_OPTIONS,
    build_py_files,
    find_spark_submit,
    spark_submit_command,
    spark_submit_env,
)
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import CompactionOperation, CompactionPlan, serialize_compaction_plan
from tms.planning.compaction_strategy import capture_metrics
from tms.planning.policy import TablePolicy
from tms.table_service import TableService
from worker.warm_engine import EngineSpec, WarmEngine

STARTUP_SCRIPT = textwrap.dedent("""
    from pyspark import SparkConf, SparkContext

    def first_task(_):
        import tms.execute.compaction  # what the job's first task imports
        return 0

    sc = SparkContext.getOrCreate(SparkConf().setAppName("tms startup"))  # as jobs/run.py starts and stops
    sc.parallelize([0], 1).map(first_task).collect()
    sc._jsc.stop()
""")


def plan_compaction(path: Path) -> tuple[str, int, int]:
    """Plan every slice with logs; returns the instant and the plan's base and log bytes. Each operation carries
    the planner's metrics: Hudi's executor reads TOTAL_LOG_FILES_SIZE from every one."""
    table = HudiTable.load(str(path))
    slices = [fs for fs in table.file_system_view().latest_slices() if fs.log_files]
    ops = [CompactionOperation(base_instant_time=fs.base_instant, file_id=fs.file_id, partition_path=fs.partition,
                               data_file_path=fs.base_file.file_name if fs.base_file else None,
                               delta_file_paths=[f.file_name for f in fs.log_files],
                               metrics=capture_metrics(fs.base_file.size if fs.base_file else None,
                                                       [f.size for f in fs.log_files],
                                                       TablePolicy().parquet_max_file_size))
           for fs in slices]
    plan = serialize_compaction_plan(CompactionPlan(operations=ops))
    instant = table.timeline.create_requested(Action.COMPACTION, plan).timestamp
    return instant, sum(fs.base_size for fs in slices), sum(fs.log_bytes for fs in slices)


def undo_compaction(path: Path, instant: str) -> None:
    """Back to the requested plan for the next round: the commit, its inflight file and its base files go."""
    timeline = path / HudiTable.load(str(path)).config.timeline_dir
    for f in timeline.iterdir():
        if f.name.startswith(instant) and not f.name.endswith(".requested"):
            f.unlink()
    for f in path.rglob(f"*_{instant}.parquet"):
        f.unlink()


class PeakRss:
    """The largest resident size of a process tree (the process and its descendants), sampled in a thread
    while the block runs."""

    def __init__(self, pid: Callable[[], int | None]):
        self._pid, self.peak, self._stop = pid, 0, threading.Event()

    def _tree_rss(self) -> int:
        pid = self._pid()
        if pid is None:
            return 0
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self._tree_rss())

    def __enter__(self) -> PeakRss:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def timed_submit(cmd: list[str], master: str) -> tuple[float, int]:
    """(seconds, peak resident bytes of the job's processes)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=spark_submit_env(master), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    with PeakRss(lambda: proc.pid) as rss:
        _, stderr = proc.communicate()
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    return elapsed, rss.peak


def peer_lower_bound(path: Path, out: Path) -> tuple[float, int]:
    """hudi-rs reads the snapshot, pyarrow writes it as one parquet file."""
    from hudi import HudiTableBuilder
    started = time.perf_counter()
    batches = HudiTableBuilder.from_base_uri(str(path)).build().read()
    with pq.ParquetWriter(out, batches[0].schema, compression="snappy") as writer:
        for batch in batches:
            writer.write_batch(batch)
    return time.perf_counter() - started, sum(b.num_rows for b in batches)


def start_warm_engine(tmp: Path, py_files: Path, master: str) -> WarmEngine:
    spec = EngineSpec(queue="bench", kind="local" if master.startswith("local") else "standalone", master=master,
                      spark_conf=(("spark.ui.showConsoleProgress", "false"),), executors=os.cpu_count() or 1,
                      executor_memory_mb=1024, executor_cores=1, driver_memory_mb=1024, driver_cores=1)
    engine = WarmEngine(spec, py_files=py_files, run_dir=tmp / "engine", log_dir=tmp)
    started = time.perf_counter()
    if engine.wait_ready(300) is None:
        raise SystemExit(f"the warm engine did not start; see {tmp}/warm-engine-bench-1.log")
    print(f"warm engine {engine.app_id} ready in {time.perf_counter() - started:.1f} s (not counted)")
    return engine


def timed_warm(engine: WarmEngine, path: Path, instant: str, log: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with PeakRss(lambda: engine.pid) as rss:
        plan = engine.run(f"bench-{started}", ["--table", str(path), "--instant", instant, "--action",
                                               Action.COMPACTION], log)
        while (status := plan.wait(0.01)) is None:
            pass
    elapsed = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"the plan failed on the warm engine:\n{plan.tail()}")
    return elapsed, rss.peak


def start_java_hudi(tmp: Path, version: int, memory: str):
    """A warm Spark 3.5 session with the Hudi bundle that writes table `version` (tests/hudi_java)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from hudi_java import harness_env
    from hudi_java.harness import HudiDriver
    python, jars = harness_env.ensure()
    started = time.perf_counter()
    driver = HudiDriver(python, jars[version], tmp / "hudi-driver.log", memory=memory)
    print(f"Java Hudi (Spark {driver.spark_version}, table version {driver.table_version}) ready in "
          f"{time.perf_counter() - started:.1f} s (not counted)")
    return driver


def timed_java(driver, path: Path, instant: str) -> tuple[float, int]:
    """Hudi's own compaction of TMS's plan: `run_compaction` executes the requested instant."""
    started = time.perf_counter()
    with PeakRss(lambda: driver.process.pid) as rss:
        driver.call(op="sql", timeout=7200,
                    statement=f"CALL run_compaction(op => 'run', path => '{path}', timestamp => {instant})")
    return time.perf_counter() - started, rss.peak


def snapshot_rows(path: Path) -> int:
    from hudi import HudiTableBuilder
    return sum(b.num_rows for b in HudiTableBuilder.from_base_uri(str(path)).build().read())


def _completed(path: Path, instant: str) -> bool:
    found = HudiTable.load(str(path)).timeline.get(instant)
    return found is not None and found.is_completed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000_000, help="rows in the table (20M: about 500 MB of base files)")
    ap.add_argument("--update-fraction", type=float, default=0.1)
    ap.add_argument("--file-rows", type=int, default=1_700_000, help="rows per base file (at most)")
    ap.add_argument("--table-version", type=int, choices=[6, 8], default=8)
    ap.add_argument("--log-blocks", choices=["avro", "parquet"], default="avro")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds of (b), (a), the job, (c) and (d); the fastest of each counts "
                         "(the first is often slowed)")
    ap.add_argument("--no-java", action="store_true", help="without (d), Hudi's Java compaction")
    ap.add_argument("--java-memory", default="4g", help="the Java Hudi session's driver memory (it runs local[2])")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="tms-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        path = tmp / "trips"
        started = time.perf_counter()
        build_trips_table(path, args.rows, args.update_fraction, file_rows=args.file_rows,
                          version=args.table_version, log_blocks=args.log_blocks)
        instant, base_bytes, log_bytes = plan_compaction(path)
        mb = (base_bytes + log_bytes) / 1e6
        print(f"MOR v{args.table_version} table: {args.rows:,} rows, {args.update_fraction:.0%} updated in "
              f"{args.log_blocks} log blocks; plan {instant}: {base_bytes / 1e6:.0f} MB base + "
              f"{log_bytes / 1e6:.0f} MB logs (built in {time.perf_counter() - started:.0f} s); "
              f"spark-submit: {find_spark_submit()}")

        py_files = build_py_files(tmp)
        startup_script = tmp / "startup.py"
        startup_script.write_text(STARTUP_SCRIPT)
        engine = start_warm_engine(tmp, py_files, args.master)
        java = None if args.no_java else start_java_hudi(tmp, args.table_version, args.java_memory)
        startups, peers, jobs, warms, javas = [], [], [], [], []
        for round_ in range(args.repeat):  # interleaved, so that all see the same machine
            if round_:
                undo_compaction(path, instant)
            startups.append(timed_submit([find_spark_submit(), "--master", args.master, "--py-files", str(py_files),
                                          "--conf", f"spark.driver.extraJavaOptions={DRIVER_JAVA_OPTIONS}",
                                          str(startup_script)], args.master))
            elapsed, peer_rows = peer_lower_bound(path, tmp / "peer.parquet")
            peers.append(elapsed)
            jobs.append(timed_submit(spark_submit_command(str(path), instant, py_files=py_files, master=args.master,
                                                          service=TableService.COMPACTION), args.master))
            assert _completed(path, instant)
            assert snapshot_rows(path) == peer_rows == args.rows
            undo_compaction(path, instant)
            warms.append(timed_warm(engine, path, instant, tmp / "warm-plan.log"))
            assert _completed(path, instant)
            assert snapshot_rows(path) == peer_rows
            if java is not None:
                undo_compaction(path, instant)
                javas.append(timed_java(java, path, instant))
                assert _completed(path, instant), "Hudi's compaction did not complete TMS's plan"
                assert snapshot_rows(path) == peer_rows, "Hudi's compaction of TMS's plan changed the rows"
        engine.stop()
        if java is not None:
            java.close()
        startup, job, warm = _best(startups), _best(jobs), _best(warms)
        peer = min(peers)
        print(f"rounds (s): startup {_fmt(startups)}, peer {_fmt([(p, 0) for p in peers])}, job {_fmt(jobs)}, "
              f"warm {_fmt(warms)}" + (f", Hudi {_fmt(javas)}" if javas else ""))

        print(f"(b) Spark startup alone   {startup[0]:7.1f} s  peak {_mb(startup)}")
        print(f"(a) hudi-rs + pyarrow     {peer:7.1f} s  {mb / peer:7.1f} MB/s")
        print(f"    compaction job        {job[0]:7.1f} s  {mb / job[0]:7.1f} MB/s  peak {_mb(job)}  "
              f"(without startup: {job[0] - startup[0]:.1f} s, {mb / max(job[0] - startup[0], 1e-9):.1f} MB/s)")
        print(f"(c) on the warm engine    {warm[0]:7.1f} s  {mb / warm[0]:7.1f} MB/s  peak {_mb(warm)}")
        print(f"ratio job/(a): {job[0] / peer:.2f} (goal <= 1.5); warm/(a): {warm[0] / peer:.2f} (goal <= 1.2); "
              f"startup share of the job: {startup[0] / job[0]:.0%}")
        if javas:
            hudi = _best(javas)
            print(f"(d) Hudi's Java compaction {hudi[0]:6.1f} s  {mb / hudi[0]:7.1f} MB/s  peak {_mb(hudi)}")
            print(f"TMS / Hudi: job/(d) {job[0] / hudi[0]:.2f} (goal <= 1.0); warm/(d) {warm[0] / hudi[0]:.2f} "
                  f"(goal <= 0.6); peak memory job/(d) {job[1] / hudi[1]:.2f}, warm/(d) {warm[1] / hudi[1]:.2f}")


def _best(rounds: list[tuple[float, int]]) -> tuple[float, int]:
    """The fastest round's time, and the largest peak of all rounds."""
    return min(t for t, _ in rounds), max(p for _, p in rounds)


def _mb(measured: tuple[float, int]) -> str:
    return f"{measured[1] / 2**20:,.0f} MB"


def _fmt(rounds: list[tuple[float, int]]) -> str:
    return "/".join(f"{t:.1f}" for t, _ in rounds)


if __name__ == "__main__":
    main()
