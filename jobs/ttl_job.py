"""The job of a TTL task (ttl, partition_ttl): deletes a table's expired records or partitions, in this process
(tms.execute.ttl_task), with the fence and exit status of `jobs/run.py`.

    python -m jobs.ttl_job --table PATH --instant T --service ttl --plan JSON [--fence-url URL] [--option K=V ...]
"""
from __future__ import annotations

import argparse
import json
import sys

from tms.errors import ONE_LINE_ERRORS
from tms.execute.fencing import http_fence, no_fence
from tms.execute.job_result import record_line
from tms.execute.ttl_task import run_ttl_task
from tms.hudi.table.write_options import parse_option_pairs
from tms.table_service import TTL_SERVICES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="jobs.ttl_job", description="Run one TTL task of a Hudi table.")
    ap.add_argument("--table", required=True, help="base path (or URL) of the Hudi table")
    ap.add_argument("--instant", required=True, help="the task's instant (the time it was requested)")
    ap.add_argument("--service", "--action", dest="service", required=True, choices=[s.value for s in TTL_SERVICES])
    ap.add_argument("--plan", required=True, help="the task's plan, as JSON (the TTL options, the moment)")
    ap.add_argument("--fence-url", help="GET under the table's lock before each write; non-2xx: the lease is lost")
    ap.add_argument("--option", action="append", default=[], help="a lock option of the table, key=value")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence
    try:
        run = run_ttl_task(args.service, args.table, args.instant, json.loads(args.plan), fence,
                           parse_option_pairs(args.option))
    except ONE_LINE_ERRORS + (OSError,) as e:  # one line, as every TMS command ends
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(run.summary())
    print(record_line(run.record()), flush=True)  # the worker records it
    return 0


if __name__ == "__main__":
    sys.exit(main())
