"""The backups' schedule, run by the leader every `manager_backup_seconds`: for each enabled table with a
backup policy, the next backup task its schedule asks for (tms.backup.schedule decides), recorded runnable
for the workers."""
from __future__ import annotations

import logging
from datetime import datetime

from tms.backup.errors import BackupError
from tms.backup.requests import request_backup_task
from tms.backup.schedule import next_backup_task
from tms.db import BackupTaskRepo, ConflictError, TaskRecord
from tms.leadership import LeaderLease

log = logging.getLogger(__name__)


def schedule_backups(lease: LeaderLease, epoch: int, now: datetime | None = None) -> list[TaskRecord]:
    """Record the backup tasks due now (`now`: the database's clock unless given); the tasks recorded."""
    recorded = []
    with lease.fenced(epoch) as session:
        repo = BackupTaskRepo(session)
        at = now or repo.now()
        for table in repo.tables_with_backups():
            policy = table.policy
            service = next_backup_task(policy.backup_schedule, repo.history(table.id), at)
            if service is None:
                continue
            try:
                recorded.append(request_backup_task(session, table.id, service, at))
            except (ConflictError, BackupError) as exc:  # an operator's request came first
                log.info("table %s: no %s now: %s", table.id, service, exc)
    for task in recorded:
        log.info("task %s: %s of table %s requested by the schedule", task.id, task.service, task.table_id)
    return recorded
