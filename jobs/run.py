"""The PySpark entry point of every table service: run one pending plan (compaction, clustering, clean or
rollback) of one table. The driver starts and completes the instant; the plan's operations run as Spark tasks.

    spark-submit --master local[*] --py-files tms-jobs.zip jobs/run.py \\
        --table PATH --instant T [--action compaction] [--fence-url URL]

`tms execute` builds the zip and this command line (tms/execute/spark_submit.py); jobs/README.md shows how to
submit to a standalone master, YARN or Kubernetes. Exit status 0: the instant completed; 1: it did not.
"""
from __future__ import annotations

import argparse
import sys

from tms.errors import TMSError
from tms.execute.dispatch import EXECUTORS, execute_instant
from tms.execute.fencing import http_fence, no_fence
from tms.hudi.table import HudiTable


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="jobs/run.py", description="Run one table-service plan of a Hudi table.")
    ap.add_argument("--table", required=True, help="base path (or URL) of the Hudi table")
    ap.add_argument("--instant", required=True, help="instant time of the pending plan")
    ap.add_argument("--action", choices=sorted(EXECUTORS), help="refuse the plan if it is of another action")
    ap.add_argument("--fence-url", help="GET before each timeline change; a non-2xx answer means the lease is lost")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # PySpark (heavy: it starts a JVM gateway) loads once the arguments are known good.
    from pyspark.sql import SparkSession

    from jobs.spark_runner import SparkRunner

    spark = SparkSession.builder.appName(f"tms {args.action or 'plan'} {args.instant} {args.table}").getOrCreate()
    print(f"spark application id: {spark.sparkContext.applicationId}", flush=True)  # the worker records it
    try:
        result = execute_instant(HudiTable.load(args.table), args.instant, SparkRunner(spark.sparkContext),
                                 http_fence(args.fence_url) if args.fence_url else no_fence, args.action)
    except TMSError as e:  # one line, as every TMS command ends
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
