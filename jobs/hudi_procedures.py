"""The job of a Hudi engine: executes a plan TMS already wrote with Hudi's own Spark SQL procedures, on the
engine's Spark (a Spark 3.5 with Hudi's Spark bundle), so it imports nothing of TMS. Hudi commits the instant
itself; the only fence it can honour is the one checked here before Hudi starts: a lost lease stops the job
before any file is written (Hudi's lock provider, given with --option, guards the commit against writers).

    spark-submit --jars hudi-spark3.5-bundle_2.12-1.0.2.jar jobs/hudi_procedures.py \\
        --table PATH --instant T --action compaction [--fence-url URL] [--option hoodie.k=v ...]"""
from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request

# The services whose TMS-written plan Hudi's procedures execute as written (op 'run' / 'execute' with the
# instant); a clean is not among them: run_clean schedules a clean of its own before it executes.
PROCEDURES = {
    "compaction": "CALL run_compaction(op => 'run', path => '{path}', timestamp => {instant}{options})",
    "clustering": "CALL run_clustering(op => 'execute', path => '{path}', instants => '{instant}'{options})",
}


def lease_held(fence_url: str) -> bool:
    try:
        with urllib.request.urlopen(fence_url, timeout=30) as answer:
            return 200 <= answer.status < 300
    except (urllib.error.URLError, OSError):
        return False


def statement(action: str, path: str, instant: str, options: dict[str, str]) -> str:
    if "'" in path or not instant.isdigit():
        raise ValueError(f"cannot quote table path {path!r} or instant {instant!r} in a Hudi procedure call")
    joined = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    if "'" in joined:
        raise ValueError("cannot quote an option with a quote in a Hudi procedure call")
    return PROCEDURES[action].format(path=path, instant=instant,
                                     options=f", options => '{joined}'" if joined else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", required=True)
    ap.add_argument("--instant", required=True)
    ap.add_argument("--action", required=True)
    ap.add_argument("--fence-url")
    ap.add_argument("--option", action="append", default=[], help="a Hudi write option key=value")
    args = ap.parse_args(argv)
    if args.action not in PROCEDURES:
        print(f"error: Hudi's procedures cannot execute a TMS-planned {args.action}", flush=True)
        return 2
    options = dict(o.split("=", 1) for o in args.option)
    try:
        sql = statement(args.action, args.table, args.instant, options)
    except ValueError as exc:
        print(f"error: {exc}", flush=True)
        return 2
    if args.fence_url and not lease_held(args.fence_url):
        print(f"error: the lease on {args.action} {args.instant} is lost; Hudi was not started", flush=True)
        return 3
    from pyspark.sql import SparkSession  # the engine's PySpark, imported only once there is work

    spark = (SparkSession.builder.appName(f"tms hudi {args.action} {args.instant}")
             .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
             .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
             .getOrCreate())
    try:
        spark.sql(sql).collect()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
