"""The job of a TTL task (ttl, partition_ttl): deletes a table's expired records or partitions, in this process
(tms.execute.ttl_task), with the fence and exit status of `jobs/run.py`.

    python -m jobs.ttl_job --table PATH --instant T --service ttl --plan JSON [--fence-url URL] [--option K=V ...]
"""
from __future__ import annotations

import sys

from jobs.in_process import locked_task_main, task_parser
from tms.config import load_settings
from tms.execute.ttl_task import run_ttl_task
from tms.table_context import table_context
from tms.table_service import TTL_SERVICES
from tms.task_payload import TtlRequest


def main(argv: list[str] | None = None) -> int:
    ap = task_parser("jobs.ttl_job", "Run one TTL task of a Hudi table.", [s.value for s in TTL_SERVICES],
                     "the TTL options, the moment",
                     "GET under the table's lock before each write; non-2xx: the lease is lost")

    def run(args, plan, fence, options):
        return run_ttl_task(args.service, args.table, args.instant, plan, fence, options,
                            context=table_context(load_settings()))
    return locked_task_main(ap, TtlRequest, run, argv)


if __name__ == "__main__":
    sys.exit(main())
