"""The job without Spark: run one pending plan in this process, its operations in threads, with the same
arguments, fence and exit status as `jobs/run.py`. The worker launches it when TMS_WORKER_RUNNER=python
(small tables, machines without Java, tests of scheduling), as a process it can time out and kill.

    python -m jobs.python_job --table PATH --instant T [--service S] [--fence-url URL] [--option k=v ...]
"""
from __future__ import annotations

import sys

from jobs.run import parse_args, run_plan
from tms.config import load_settings
from tms.execute.runner import LocalRunner


def main(argv: list[str] | None = None) -> int:
    attempts = load_settings().worker.task_max_failures  # a failed task is attempted again alone, as on Spark
    return run_plan(parse_args(argv), LocalRunner(attempts=attempts))


if __name__ == "__main__":
    sys.exit(main())
