"""The PySpark entry point of every table service: run one pending plan (compaction, clustering, clean or
rollback) of one table. The driver starts and completes the instant; the plan's operations run as Spark tasks.

    spark-submit --master local[*] --py-files tms-jobs.zip jobs/run.py \\
        --table PATH --instant T [--service compaction] [--fence-url URL] [--option hoodie.write.lock.k=v ...]

`tms execute` builds the zip and this command line (tms/execute/spark_submit.py); jobs/README.md shows how to
submit to a standalone master, YARN or Kubernetes. Exit status 0: the instant completed; 1: it did not; 3: a
conflicting write won (the attempt and its plan were rolled back: the task ends with reason `conflict`).
"""
from __future__ import annotations

import argparse
import sys

from tms.config import load_settings
from tms.errors import ONE_LINE_ERRORS
from tms.execute.dispatch import execute_instant
from tms.execute.errors import CONFLICT_EXIT_STATUS
from tms.execute.fencing import http_fence, no_fence
from tms.execute.job_result import result_line
from tms.execute.runner import Runner
from tms.hudi.locks import TransactionManager, parse_concurrency_options
from tms.hudi.records.merge_budget import is_memory_option, merge_budget_bytes
from tms.hudi.storage.paths import require_under_roots
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.write_options import parse_option_pairs
from tms.hudi.timeline.conflicts import WriteConflictError
from tms.table_context import table_context
from tms.table_services import TABLE_SERVICES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="jobs/run.py", description="Run one table-service plan of a Hudi table.")
    ap.add_argument("--table", required=True, help="base path (or URL) of the Hudi table")
    ap.add_argument("--instant", required=True, help="instant time of the pending plan")
    # --action: the name every version of the job code knows (a registered engine's older code too).
    ap.add_argument("--service", "--action", dest="service",
                    choices=sorted(s for s, e in TABLE_SERVICES.items() if e.executor is not None),
                    help="the table service: refuse the plan if it is of another service")
    ap.add_argument("--fence-url", help="GET before each timeline change; a non-2xx answer means the lease is lost")
    ap.add_argument("--option", action="append", default=[],
                    help="the table's lock option key=value (repeatable): hoodie.write.lock.*, concurrency mode; "
                         "hoodie.memory.compaction.max.size=BYTES")
    return ap.parse_args(argv)


def run_plan(args: argparse.Namespace, runner: Runner) -> int:
    """Run the plan the arguments name on `runner`, under the table's lock; print the outcome; the exit status."""
    try:
        settings = load_settings()
        require_under_roots(args.table, settings.storage_roots)  # as it resolves now, not when registered
        table = HudiTable.load(args.table, context=table_context(settings))
        options = parse_option_pairs(args.option)
        memory = {k: v for k, v in options.items() if is_memory_option(k)}
        budget = merge_budget_bytes(memory, table.config.props, settings.worker.merge_memory_bytes)
        concurrency = parse_concurrency_options({k: v for k, v in options.items() if k not in memory},
                                                base_path=args.table, table_name=table.name)
        with TransactionManager(table, concurrency) as transactions:
            result = execute_instant(table, args.instant, runner,
                                     http_fence(args.fence_url, patience=settings.worker.fence_patience_seconds)
                                     if args.fence_url else no_fence, args.service,
                                     transactions, budget)
    except WriteConflictError as e:  # the writer won: the attempt and its plan were rolled back
        print(f"error: {e}", file=sys.stderr)
        return CONFLICT_EXIT_STATUS
    except ONE_LINE_ERRORS as e:  # one line, as every TMS command ends
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(result.summary())
    print(result_line(result), flush=True)  # the worker records it
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # PySpark (heavy: it starts a JVM gateway) loads once the arguments are known good. A SparkContext, not a
    # SparkSession: the plan runs as RDD tasks, and pyspark.sql's imports (pandas, pyarrow in the driver) add
    # seconds to every job's start.
    from pyspark import SparkContext

    from jobs.spark_runner import SparkRunner, driver_conf

    settings = load_settings()
    sc = SparkContext.getOrCreate(driver_conf(f"tms {args.service or 'plan'} {args.instant} {args.table}", settings))
    print(f"spark application id: {sc.applicationId}", flush=True)  # the worker records it
    try:
        return run_plan(args, SparkRunner(sc, settings.worker.part_bytes))
    finally:
        # The application ends in the JVM; pyspark's own stop() then waits up to a second for its accumulator
        # server's poll loop, a daemon thread that the driver's exit ends anyway.
        sc._jsc.stop()


if __name__ == "__main__":
    sys.exit(main())
