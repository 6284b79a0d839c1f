"""How a failed attempt is classified, and the waits between attempts."""
from __future__ import annotations

import random

import pytest

from worker.retry_policy import RetryLimits, backoff_seconds, classify

LIMITS = RetryLimits(backoff_seconds=60, backoff_max_seconds=3600, max_attempts=3)


@pytest.mark.parametrize("error, tail, kind, retryable", [
    ("the job exited with status 1: error: injected crash", "", "crash", True),
    ("the job was killed by signal 9", "java.lang.OutOfMemoryError: Java heap space", "oom", True),
    ("the job exited with status 1", "ExecutorLostFailure (executor 2 exited)", "lost_executors", True),
    ("the job exited with status 1: error: attempt 3 lost its lease", "", "fenced", True),
    ("the job exited with status 1: error: unable to acquire the table lock after 2 attempt(s): held", "",
     "lock_unavailable", True),
    ("the job exited with status 1: FileNotFoundError: [Errno 2] No such file or directory: '/t/x.log'",
     "execute_instant(table, instant, LocalRunner(), fence, action)", "missing_files", False),
    ("the job exited with status 1: error: compaction 20260101000000000: missing or damaged file "
     "a/.f1_20250101000000000.log.1_0-1-0: empty log file", "", "missing_files", False),
    ("the job exited with status 1: error: unsupported table version 9", "", "unsupported", False),
    ("cannot start: MetadataFormatError: corrupt compaction plan", "", "corrupt_plan", False),
    ("the job exited with status 1: error: cannot reach the store of s3://lake/t (after its client's retries): "
     "EndpointConnectionError: Could not connect to the endpoint URL: \"http://h/lake/t/.hoodie/hoodie.properties\"",
     "", "store_unreachable", True),
])
def test_failures_are_classified(error, tail, kind, retryable):
    failure = classify(timed_out=False, stopped=False, error=error, tail=tail, attempts_in_series=1, limits=LIMITS)
    assert (failure.kind, failure.retryable) == (kind, retryable)
    assert (failure.retry_in_seconds is not None) == retryable
    assert failure.memory_growth == (1.5 if kind == "oom" else 1.0)


def test_a_conflict_ends_the_task_and_is_not_retried():
    """The job gave way to a conflicting write (exit status 3): whatever its error says, never retried."""
    failure = classify(timed_out=False, stopped=False, conflict=True, attempts_in_series=1, limits=LIMITS, tail="",
                       error="the job exited with status 3: error: conflict: clustering 1 overlaps commit 2 "
                             "(lost the table lock race)")
    assert (failure.kind, failure.retryable, failure.retry_in_seconds) == ("conflict", False, None)
    assert "the next plan takes the new data" in failure.reason


def test_timeouts_and_stops_are_retried_and_stops_at_once():
    timeout = classify(timed_out=True, stopped=False, error="ran past", tail="", attempts_in_series=1, limits=LIMITS)
    assert (timeout.kind, timeout.retryable) == ("timeout", True) and 48 <= timeout.retry_in_seconds <= 72
    stopped = classify(timed_out=False, stopped=True, error="the worker stopped", tail="", attempts_in_series=3,
                       limits=LIMITS)
    assert (stopped.kind, stopped.retry_in_seconds, stopped.uncounted) == ("stopped", 0.0, True)


def test_a_plan_held_by_pending_writes_is_retried_after_the_first_wait_whatever_its_attempts():
    """The writes pending before the plan complete, or fail and are rolled back once their heartbeat expires: a
    plan that gave up before them would stay on the timeline, and writers updating its file groups would conflict
    with it for ever."""
    error = ("the job exited with status 1: error: clustering 20261127040558719 is held by writes still pending "
             "before it: 20261127040534902 (deltacommit inflight); it runs once they complete or are rolled back")
    for attempts in (1, 3, 30):
        held = classify(timed_out=False, stopped=False, error=error, tail="", attempts_in_series=attempts,
                        limits=LIMITS)
        assert (held.kind, held.retryable, held.uncounted) == ("held", True, True)
        assert 48 <= held.retry_in_seconds <= 72, "the first wait of a series, not a doubled one"


def test_the_last_attempt_is_not_retried_and_says_why():
    last = classify(timed_out=False, stopped=False, error="boom", tail="", attempts_in_series=3, limits=LIMITS)
    assert last.retryable and last.retry_in_seconds is None and "retries exhausted after 3" in last.reason


def test_backoff_doubles_per_attempt_with_jitter_up_to_the_maximum():
    rng = random.Random(1)
    for attempt, base in ((1, 60), (2, 120), (3, 240), (6, 1920)):
        waits = [backoff_seconds(attempt, LIMITS, rng) for _ in range(200)]
        assert base * 0.8 <= min(waits) and max(waits) <= base * 1.2
        assert max(waits) - min(waits) > base * 0.2  # jittered
    assert backoff_seconds(10, LIMITS, rng) == 3600
