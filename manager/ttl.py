"""The TTL schedule, run by the leader every `manager_ttl_seconds`: for each enabled table whose policy sets a
record or partition TTL, the TTL task due now (tms.planning.ttl_schedule decides), recorded runnable for the
workers."""
from __future__ import annotations

import logging
from datetime import datetime

from pydantic import ValidationError

from tms.db import ConflictError, TaskRecord, TtlTaskRepo
from tms.leadership import LeaderLease
from tms.planning.ttl_schedule import due_ttl_service, ttl_task_plan

log = logging.getLogger(__name__)


def schedule_ttl(lease: LeaderLease, epoch: int, now: datetime | None = None) -> list[TaskRecord]:
    """Record the TTL tasks due now (`now`: the database's clock unless given); the tasks recorded."""
    recorded = []
    with lease.fenced(epoch) as session:
        repo = TtlTaskRepo(session)
        at = now or repo.now()
        for table in repo.tables_with_ttl():
            try:
                policy = table.policy
            except ValidationError as exc:  # checked when set; a stored policy TMS cannot read is the planner's alert
                log.warning("table %s: no TTL task: its policy does not read: %s", table.id, exc)
                continue
            service = due_ttl_service(policy, repo.last_requested(table.id), at, busy=repo.active(table.id) is not None)
            if service is None:
                continue
            try:
                recorded.append(repo.request(table.id, service, ttl_task_plan(policy, at), priority=table.priority,
                                             queue=table.queue, now=at))
            except ConflictError as exc:  # requested meanwhile
                log.info("table %s: no %s now: %s", table.id, service, exc)
    for task in recorded:
        log.info("task %s: %s of table %s requested by the schedule", task.id, task.service, task.table_id)
    return recorded
