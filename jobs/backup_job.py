"""The job of a backup task (backup, backup_clean, backup_restore): copies between a table and its backup
root, in this process (no Spark: the work is the storage's, not a computation), with the fence and exit
status of `jobs/run.py`.

    python -m jobs.backup_job --table PATH --instant T --service backup --plan JSON [--fence-url URL]
"""
from __future__ import annotations

import argparse
import json
import sys

from tms.backup.job import run_backup_task
from tms.errors import ONE_LINE_ERRORS
from tms.execute.fencing import http_fence, no_fence
from tms.execute.job_result import record_line
from tms.table_service import BACKUP_SERVICES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="jobs.backup_job", description="Run one backup task of a Hudi table.")
    ap.add_argument("--table", required=True, help="base path (or URL) of the Hudi table")
    ap.add_argument("--instant", required=True, help="the task's instant (the time it was requested)")
    ap.add_argument("--service", "--action", dest="service", required=True, choices=[s.value for s in BACKUP_SERVICES])
    ap.add_argument("--plan", required=True, help="the task's plan, as JSON (the backup root, ...)")
    ap.add_argument("--fence-url", help="GET before each write that needs the lease; non-2xx: the lease is lost")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence
    try:
        record, summary = run_backup_task(args.service, args.table, json.loads(args.plan), fence)
    except ONE_LINE_ERRORS + (OSError,) as e:  # one line, as every TMS command ends
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(summary)
    print(record_line(record), flush=True)  # the worker records it
    return 0


if __name__ == "__main__":
    sys.exit(main())
