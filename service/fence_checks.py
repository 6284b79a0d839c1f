"""The fence checks of running jobs (`GET /api/v1/tasks/{id}/fence`), kept apart from the rest of the API: their
own database connections and their own share of worker threads, so that a job's check never waits behind slow
requests holding the shared threadpool or connection pool. (A job whose check goes unanswered stops.)"""
from __future__ import annotations

import anyio
from fastapi import HTTPException, status

from tms.db import ConflictError, Database, TaskRepo, TaskState, hash_secret

# Checks answered at the same time; each holds one connection for one short transaction.
CONNECTIONS = 4


class FenceChecks:
    def __init__(self, url: str):
        self.database = Database(url, pool_size=CONNECTIONS // 2)  # and as many again in overflow
        self.limiter = anyio.CapacityLimiter(CONNECTIONS)

    async def check(self, task_id: int, token: int, key: str) -> None:
        """Returns while `token` holds the task's live lease; 403 (HTTPException) for a wrong key,
        ConflictError (409) once the lease is lost."""
        await anyio.to_thread.run_sync(self._check, task_id, token, key, limiter=self.limiter)

    def _check(self, task_id: int, token: int, key: str) -> None:
        with self.database.transaction() as session:
            repo = TaskRepo(session)
            if repo.attempt_with_fence_key(task_id, token, hash_secret(key)) is None:
                raise HTTPException(status.HTTP_403_FORBIDDEN, f"no attempt of task {task_id} with this token and key")
            if not repo.holds_fence(task_id, token):
                raise ConflictError(_lost_lease_reason(repo.get(task_id), token))

    def close(self) -> None:
        self.database.dispose()


def _lost_lease_reason(task, token: int) -> str:
    if task.state != TaskState.RUNNING:
        return f"task {task.id} is {task.state}: the attempt with fencing token {token} may not change the timeline"
    if task.fencing_token != token:
        return f"task {task.id} was taken over: fencing token {task.fencing_token} holds the lease, not {token}"
    return f"the lease of task {task.id} expired"
