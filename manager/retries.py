"""Retries: the leader makes the retryable FAILED tasks RUNNABLE again when their `next_attempt_at` comes
(the worker that saw the failure classified it and set the time; see worker/retry_policy.py)."""
from __future__ import annotations

import logging

from tms.db import TaskRepo
from tms.leadership import LeaderLease

log = logging.getLogger(__name__)


def promote_due_retries(lease: LeaderLease, epoch: int) -> list[int]:
    """The tasks made RUNNABLE again."""
    with lease.fenced(epoch) as session:
        tasks = TaskRepo(session)
        promoted = [(t.id, t.attempt + 1, t.retry_reason) for t in tasks.due_retries() if tasks.retry(t) is not None]
    for task_id, attempt, reason in promoted:
        log.info("task %s: retry, attempt %s (%s) [epoch %s]", task_id, attempt, reason, epoch)
    return [task_id for task_id, _, _ in promoted]
