"""The job of a backup task (backup, backup_clean, backup_restore): copies between a table and its backup
root, in this process (no Spark: the work is the storage's, not a computation), with the fence and exit
status of `jobs/run.py`.

    python -m jobs.backup_job --table PATH --instant T --service backup --plan JSON [--fence-url URL]
"""
from __future__ import annotations

import argparse
import sys

from jobs.in_process import finish, task_parser
from tms.backup.job import run_backup_task
from tms.config import load_settings
from tms.execute.fencing import http_fence, no_fence
from tms.table_context import table_context
from tms.table_service import BACKUP_SERVICES
from tms.task_payload import BackupRequest


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return task_parser("jobs.backup_job", "Run one backup task of a Hudi table.", [s.value for s in BACKUP_SERVICES],
                       "the backup root, ...",
                       "GET before each write that needs the lease; non-2xx: the lease is lost").parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence

    def run() -> tuple[str, dict]:
        record, summary = run_backup_task(args.service, args.table, BackupRequest.model_validate_json(args.plan), fence,
                                          table_context(load_settings()))
        return summary, record
    return finish(run)


if __name__ == "__main__":
    sys.exit(main())
