"""The job of a TTL task (ttl, partition_ttl): deletes a table's expired records or partitions, in this process
(tms.execute.ttl_task), with the fence and exit status of `jobs/run.py`.

    python -m jobs.ttl_job --table PATH --instant T --service ttl --plan JSON [--fence-url URL] [--option K=V ...]
"""
from __future__ import annotations

import argparse
import json
import sys

from jobs.in_process import finish, task_parser
from tms.execute.fencing import http_fence, no_fence
from tms.execute.ttl_task import run_ttl_task
from tms.hudi.table.write_options import parse_option_pairs
from tms.table_service import TTL_SERVICES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = task_parser("jobs.ttl_job", "Run one TTL task of a Hudi table.", [s.value for s in TTL_SERVICES],
                     "the TTL options, the moment",
                     "GET under the table's lock before each write; non-2xx: the lease is lost")
    ap.add_argument("--option", action="append", default=[], help="a lock option of the table, key=value")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence

    def run() -> tuple[str, dict]:
        ttl = run_ttl_task(args.service, args.table, args.instant, json.loads(args.plan), fence,
                           parse_option_pairs(args.option))
        return ttl.summary(), ttl.record()
    return finish(run)


if __name__ == "__main__":
    sys.exit(main())
