"""The job without Spark: run one pending plan in this process, its operations in threads, with the same
arguments, fence and exit status as `jobs/run.py`. The worker launches it when TMS_WORKER_RUNNER=python
(small tables, machines without Java, tests of scheduling), as a process it can time out and kill.

    python -m jobs.python_job --table PATH --instant T [--action A] [--fence-url URL]
"""
from __future__ import annotations

import sys

from jobs.run import parse_args
from tms.errors import TMSError
from tms.execute.dispatch import execute_instant
from tms.execute.fencing import http_fence, no_fence
from tms.execute.runner import LocalRunner
from tms.hudi.table import HudiTable


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fence = http_fence(args.fence_url) if args.fence_url else no_fence
    try:
        result = execute_instant(HudiTable.load(args.table), args.instant, LocalRunner(), fence, args.action)
    except TMSError as e:  # one line, as every TMS command ends
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
