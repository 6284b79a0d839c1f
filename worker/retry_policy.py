"""Whether a failed attempt is retried, when, and with what: the classification the worker records with the
failure (the manager's leader makes the task RUNNABLE again when `next_attempt_at` comes).

Retryable: the job crashed, timed out, could not reach the table's store (`store_unreachable`), lost its
executors, ran out of memory (retried with 1.5x the executor memory), the worker stopped or died, the attempt
lost its lease (`fenced`), the table's lock could not be taken in time (`lock_unavailable`). Not retryable:
the plan cannot run on this table (unsupported, corrupt plan, files missing that TMS cannot restore, a path
outside the table: `unsafe_plan`), and a
`conflict`: a write completed over the plan's file groups, the writer won and the plan was rolled back (the
job's exit status 3; the next plan takes the new data). Retried without counting against the limit: a plan
`held` by writes still pending before it (they complete, or fail and are rolled back once their heartbeat
expires: the plan must not give up before them, or it stays on the timeline and writers allowed to update its
file groups conflict with it), after the first wait of a series; and a `stopped` worker's attempt, at once.
Waits: `retry_backoff_seconds` doubled per attempt of the series, +-20% jitter, at most
`retry_backoff_max_seconds`; at most `retry_max_attempts` attempts per series (an operator's rerun starts a new one)."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from tms.config import WorkerSettings
from tms.db.repos.tasks import FailureRecord
from tms.hudi.timeline.conflicts import CONFLICT_REASON

OOM_MEMORY_GROWTH = 1.5
JITTER = 0.2

# Looked for in the whole log tail (Spark reports them anywhere in its output).
_TAIL_RULES: tuple[tuple[str, bool, re.Pattern[str]], ...] = (
    ("oom", True, re.compile(r"OutOfMemoryError|\bMemoryError\b|Container killed .* memory|exit code 137",
                             re.IGNORECASE)),
    ("lost_executors", True, re.compile(r"ExecutorLostFailure|executor lost|Lost executor", re.IGNORECASE)),
)
# tms.execute.errors.PlanHeldError, the job's last word
_HELD = re.compile(r"is held by writes still pending before it")
# Looked for in the attempt's error only (the job's own last word), the first that matches wins.
_ERROR_RULES: tuple[tuple[str, bool, re.Pattern[str]], ...] = (
    # tms.hudi.storage.paths.PathOutsideTableError: a plan or a table folder leading outside the table
    ("unsafe_plan", False, re.compile(r"outside the table|outside the storage roots|not relative to the table|"
                                      r"holds a control character")),
    # the table's store did not answer (after its client's retries): the store's trouble, not the plan's
    ("store_unreachable", True, re.compile(r"cannot reach the store of")),
    ("fenced", True, re.compile(r"lost (its|the) lease|FencingError|\bfence\b|InstantConflictError", re.IGNORECASE)),
    ("lock_unavailable", True, re.compile(r"\block(ed)?\b", re.IGNORECASE)),
    # tms.hudi.table.lost_files.DamagedFilesError: an input file lost, truncated or empty
    ("missing_files", False, re.compile(r"FileNotFoundError|No such file|does not exist|not found|"
                                        r"missing or damaged file", re.IGNORECASE)),
    ("unsupported", False, re.compile(r"Unsupported|not supported|NotImplementedError", re.IGNORECASE)),
    ("corrupt_plan", False, re.compile(r"MetadataFormatError|corrupt|cannot decode|not a valid", re.IGNORECASE)),
)


@dataclass(frozen=True)
class RetryLimits:
    backoff_seconds: float
    backoff_max_seconds: float
    max_attempts: int

    @classmethod
    def from_settings(cls, worker: WorkerSettings) -> RetryLimits:
        return cls(worker.retry_backoff_seconds, worker.retry_backoff_max_seconds, worker.retry_max_attempts)


def backoff_seconds(attempts_in_series: int, limits: RetryLimits, rng: random.Random | None = None) -> float:
    """The wait after the `attempts_in_series`-th failed attempt: base x 2^(n-1), +-20% jitter, capped."""
    base = limits.backoff_seconds * 2 ** max(0, attempts_in_series - 1)
    jitter = 1 + JITTER * (2 * (rng or random).random() - 1)
    return min(base * jitter, limits.backoff_max_seconds)


def classify(*, timed_out: bool, stopped: bool, error: str | None, tail: str, attempts_in_series: int,
             limits: RetryLimits, conflict: bool = False) -> FailureRecord:
    """The failure of an attempt, the `attempts_in_series`-th of its series. `conflict`: the job gave way to a
    conflicting write (its exit status 3)."""
    if conflict:
        return FailureRecord(CONFLICT_REASON, False, "not retried: a write completed over the plan's file groups "
                                                     "and won; the plan was rolled back, the next plan takes the "
                                                     "new data", None)
    if stopped:  # the worker shut down (tms up's Ctrl-C): run again as soon as a worker is back, uncounted
        return FailureRecord("stopped", True, "the worker stopped while the job ran; retried at once", 0.0,
                             uncounted=True)
    if not timed_out and _HELD.search(error or ""):
        wait = backoff_seconds(1, limits)
        return FailureRecord("held", True, f"held by writes still pending before the plan: retried in {wait:.0f} s "
                                           "(not counted), until they complete or are rolled back", wait,
                             uncounted=True)
    if timed_out:
        kind, retryable, growth = "timeout", True, 1.0
    else:
        kind, retryable, growth = "crash", True, 1.0
        matched = [(k, r) for k, r, p in _TAIL_RULES if p.search(f"{error or ''}\n{tail}")] \
            or [(k, r) for k, r, p in _ERROR_RULES if p.search(error or "")]
        if matched:
            kind, retryable = matched[0]
        if kind == "oom":
            growth = OOM_MEMORY_GROWTH
    if not retryable:
        return FailureRecord(kind, False, f"not retried: {kind.replace('_', ' ')} (the plan cannot run as it is)",
                             None)
    if attempts_in_series >= limits.max_attempts:
        return FailureRecord(kind, True, f"{kind.replace('_', ' ')}: retries exhausted after "
                                         f"{attempts_in_series} attempt(s)", None, growth)
    wait = backoff_seconds(attempts_in_series, limits)
    more = " with 1.5x the executor memory" if kind == "oom" else ""
    return FailureRecord(kind, True, f"{kind.replace('_', ' ')}: attempt {attempts_in_series + 1} of "
                                     f"{limits.max_attempts} in {wait:.0f} s{more}", wait, growth)
