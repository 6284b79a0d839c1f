"""The job of an archive task: archives a table's active timeline and its metadata table's, in this process
(tms.execute.archive_task), with the fence and exit status of `jobs/run.py`.

    python -m jobs.archive_job --table PATH --instant T --service archive --plan JSON [--fence-url URL] [--option K=V]
"""
from __future__ import annotations

import sys

from jobs.in_process import locked_task_main, task_parser
from tms.config import load_settings
from tms.execute.archive_task import run_archive_task
from tms.table_context import table_context
from tms.table_service import TableService
from tms.task_payload import ArchiveRequest


def main(argv: list[str] | None = None) -> int:
    ap = task_parser("jobs.archive_job", "Archive a Hudi table's active timeline.", [TableService.ARCHIVE.value],
                     "the table's policy when it was planned, the instant it archives through",
                     "GET under the table's lock before any instant file is deleted; non-2xx: the lease is lost")
    return locked_task_main(ap, ArchiveRequest, lambda args, plan, fence, options: run_archive_task(
        args.table, plan, fence, options, context=table_context(load_settings())),
                            argv)


if __name__ == "__main__":
    sys.exit(main())
