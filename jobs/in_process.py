"""What the jobs that run a requested task in their own process share (jobs.backup_job, jobs.ttl_job): one
command line (the worker builds it in worker/commands.py) and one ending, the exit status and record line of
`jobs/run.py`."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable

from tms.errors import ONE_LINE_ERRORS
from tms.execute.job_result import record_line


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
