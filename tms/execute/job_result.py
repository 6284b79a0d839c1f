"""The result record a table-service job reports to the worker that launched it: one line of JSON on its
output, whatever else Spark logs around it. The worker reads it from the job's output as it comes (never
from the log's tail, whose content depends on how much Spark logs) and keeps it on the attempt (`result`)."""
from __future__ import annotations

import json
from typing import Any

from .action import ExecutionResult

PREFIX = "tms job result: "


def result_line(result: ExecutionResult, **extra: Any) -> str:
    """`extra`: fields a job code adds to the record (an engine's code may name its version)."""
    return PREFIX + json.dumps(result.record() | extra, sort_keys=True)


def record_line(record: dict[str, Any]) -> str:
    """The result line of a job that completes no instant (a backup's copy): its own record."""
    return PREFIX + json.dumps(record, sort_keys=True)


def find_result(output: str) -> dict[str, Any] | None:
    """The last result record in complete lines of a job's output, if any."""
    found = None
    for line in output.splitlines():
        if line.startswith(PREFIX):
            try:
                record = json.loads(line[len(PREFIX):])
            except ValueError:
                continue
            if isinstance(record, dict):
                found = record
    return found
