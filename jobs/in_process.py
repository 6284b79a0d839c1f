"""What the jobs that run a requested task in their own process share (jobs.backup_job, jobs.ttl_job,
jobs.archive_job): one command line (the worker builds it in worker/commands.py) and one ending, the exit status
and record line of `jobs/run.py`."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from pydantic import BaseModel

from tms.errors import ONE_LINE_ERRORS
from tms.execute.fencing import Fence, http_fence, no_fence
from tms.execute.job_result import record_line
from tms.hudi.table.write_options import parse_option_pairs


def task_parser(prog: str, description: str, services: Iterable[str], plan_help: str,
                fence_help: str) -> argparse.ArgumentParser:
    """The arguments every in-process task job takes; a job adds its own."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--table", required=True, help="base path (or URL) of the Hudi table")
    ap.add_argument("--instant", required=True, help="the task's instant (the time it was requested)")
    # --action: the name older workers send.
    ap.add_argument("--service", "--action", dest="service", required=True, choices=list(services))
    ap.add_argument("--plan", required=True, help=f"the task's plan, as JSON ({plan_help})")
    ap.add_argument("--fence-url", help=fence_help)
    return ap


def finish(run: Callable[[], tuple[str, dict]]) -> int:
    """Run the task; print its summary and the record line the worker records (exit 0), or end a failure in
    one line (exit 1), as every TMS command ends."""
    try:
        summary, record = run()
    except ONE_LINE_ERRORS + (OSError,) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(summary)
    print(record_line(record), flush=True)
    return 0


class TaskOutcome(Protocol):
    def summary(self) -> str: ...
    def record(self) -> dict: ...


Request = TypeVar("Request", bound=BaseModel)


def locked_task_main(ap: argparse.ArgumentParser, request: type[Request],
                     run_task: Callable[[argparse.Namespace, Request, Fence, dict[str, str]], TaskOutcome],
                     argv: list[str] | None = None) -> int:
    """The whole of a job that runs one task under the table's lock: `ap` (a task_parser) gains the table's lock
    options (--option key=value), and `run_task(args, plan, fence, lock_options)` runs it, its plan read as
    `request` (the task's payload: tms.task_payload)."""
    ap.add_argument("--option", action="append", default=[], help="a lock option of the table, key=value")
    args = ap.parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence

    def run() -> tuple[str, dict]:
        done = run_task(args, request.model_validate_json(args.plan), fence, parse_option_pairs(args.option))
        return done.summary(), done.record()
    return finish(run)
