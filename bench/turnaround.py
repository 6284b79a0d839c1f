"""Turnaround of a small compaction (about 1 MB of base and log files) from RUNNABLE to SUCCEEDED through the
worker role, on a queue's warm engine beside a dedicated spark-submit job, interleaved in one run:

  a scratch PostgreSQL database, the service (uvicorn in a thread: the jobs' fence endpoint), one worker
  (spark runner, polling every --poll seconds) and two queues on local Spark: `warm` (a warm engine of two
  executors, started and ready before the first round) and `dedicated` (no warm engine). Each round copies a
  table holding the requested plan, registers the copy with its queue preferred, makes the task RUNNABLE and
  times it until it is SUCCEEDED.

Prints each round, the p50 of each, and the ratio dedicated/warm (goal: warm p50 <= 2 s).

    .venv/bin/python bench/turnaround.py                 # 5 rounds each
    .venv/bin/python bench/turnaround.py --rounds 3
"""
from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from compaction import plan_compaction
from trips_table import build_trips_table

from service.app import create_app
from tms.config import Settings
from tms.db import Database, QueueRepo, TaskRepo, TaskState
from tms.db.testing import scratch_database
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.stats import plan_stats
from tms.task_payload import PlanStatistics
from worker.loop import Worker

ADMIN = "bench-admin-token"
QUIET = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
FINAL = {TaskState.SUCCEEDED.value, TaskState.FAILED.value, TaskState.CANCELLED.value}


def serve(app) -> tuple[str, uvicorn.Server]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def run_once(database: Database, url: str, pristine: Path, copy: Path, queue: str, instant: str) -> float:
    """Copy the table, register it preferring `queue`, make its compaction RUNNABLE; seconds to SUCCEEDED."""
    shutil.copytree(pristine, copy)
    response = httpx.post(f"{url}/api/v1/tables", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30,
                          json={"base_path": str(copy), "queue": queue})
    response.raise_for_status()
    stats = plan_stats(HudiTable.load(str(copy)), instant)
    recorded = PlanStatistics(operations=stats.operations, largest_file_group_bytes=stats.largest_file_group_bytes)
    with database.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=response.json()["id"], service="compaction", instant=instant,
                                           state=TaskState.RUNNABLE, payload=recorded)
    started = time.perf_counter()
    while True:
        with database.transaction() as session:
            done = TaskRepo(session).get(task.id)
            if done.state in FINAL:
                attempt = TaskRepo(session).attempts(task.id)[-1]
                break
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    if done.state != TaskState.SUCCEEDED.value:
        raise SystemExit(f"{queue}: task {task.id} {done.state}: {done.error}\n{attempt.log_tail}")
    expected = "warm" if queue == "warm" else "dedicated"
    if attempt.engine_kind != expected:
        raise SystemExit(f"{queue}: the compaction ran on a {attempt.engine_kind} engine, not {expected}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=40_000, help="rows of the table (40,000: about 1 MB)")
    ap.add_argument("--rounds", type=int, default=5, help="runs on each engine, interleaved")
    ap.add_argument("--poll", type=float, default=0.2, help="the worker's poll interval (TMS_WORKER_POLL_SECONDS)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="tms-turnaround-") as tmp_dir, scratch_database() as db_url:
        tmp = Path(tmp_dir)
        pristine = tmp / "pristine"
        build_trips_table(pristine, args.rows, 0.1, file_rows=args.rows)
        instant, base_bytes, log_bytes = plan_compaction(pristine)
        print(f"table: {args.rows:,} rows; plan {instant}: {base_bytes / 1e6:.2f} MB base + "
              f"{log_bytes / 1e6:.2f} MB logs")

        database = Database(db_url, pool_size=10)
        settings = Settings(database_url=db_url, admin_token=ADMIN, storage_roots=[str(tmp)],
                            data_dir=tmp / "data", heartbeat_seconds=3600, worker_runner="spark",
                            worker_poll_seconds=args.poll, worker_slots=2, worker_driver_memory_mb=1024)
        url, server = serve(create_app(settings, database))
        with database.transaction() as session:
            for name, has_warm in (("warm", True), ("dedicated", False)):
                QueueRepo(session).put(name, kind="local", master="local[2]", capacity=1, spark_conf=QUIET,
                                       max_executors=2, warm_engine_enabled=has_warm, warm_engine_executors=2,
                                       warm_engine_executor_memory_mb=1024)
        worker = Worker(database, Settings(**{**settings.model_dump(), "worker_service_url": url}))
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        try:
            started = time.perf_counter()
            while worker.warm_engines is None or worker.warm_engines.engine("warm") is None \
                    or worker.warm_engines.engine("warm").app_id is None:  # type: ignore[union-attr]
                if time.perf_counter() - started > 300:
                    raise SystemExit("the warm engine did not start in 300 s")
                time.sleep(0.1)
            print(f"warm engine ready in {time.perf_counter() - started:.1f} s (not counted)")
            times: dict[str, list[float]] = {"warm": [], "dedicated": []}
            for round_ in range(args.rounds):
                for queue in times:
                    times[queue].append(run_once(database, url, pristine, tmp / f"{queue}-{round_}", queue, instant))
            warm, dedicated = statistics.median(times["warm"]), statistics.median(times["dedicated"])
            for queue, runs in times.items():
                print(f"{queue:10s} rounds (s): {'/'.join(f'{t:.2f}' for t in runs)}")
            print(f"RUNNABLE -> SUCCEEDED p50: warm engine {warm:.2f} s, dedicated spark-submit {dedicated:.2f} s; "
                  f"dedicated/warm {dedicated / warm:.1f}x; goal warm p50 <= 2 s: {'met' if warm <= 2 else 'NOT met'}")
        finally:
            worker.stop()
            thread.join(timeout=300)
            server.should_exit = True
            database.dispose()


if __name__ == "__main__":
    main()
