"""The job of an archive task: archives a table's active timeline and its metadata table's, in this process
(tms.execute.archive_task), with the fence and exit status of `jobs/run.py`.

    python -m jobs.archive_job --table PATH --instant T --service archive --plan JSON [--fence-url URL] [--option K=V]
"""
from __future__ import annotations

import argparse
import json
import sys

from jobs.in_process import finish, task_parser
from tms.execute.archive_task import run_archive_task
from tms.execute.fencing import http_fence, no_fence
from tms.hudi.table.write_options import parse_option_pairs
from tms.table_service import TableService


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = task_parser("jobs.archive_job", "Archive a Hudi table's active timeline.", [TableService.ARCHIVE.value],
                     "the table's policy when it was planned, the instant it archives through",
                     "GET under the table's lock before any instant file is deleted; non-2xx: the lease is lost")
    ap.add_argument("--option", action="append", default=[], help="a lock option of the table, key=value")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence

    def run() -> tuple[str, dict]:
        done = run_archive_task(args.table, json.loads(args.plan), fence, parse_option_pairs(args.option))
        return done.summary(), done.record()
    return finish(run)


if __name__ == "__main__":
    sys.exit(main())
