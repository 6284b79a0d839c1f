"""Fencing a job (invariant 4): each attempt gets a random fence key; its job's driver calls the service's
fence endpoint with the attempt's fencing token and that key before each timeline change, and stops when the
answer is not 2xx. The worker's own timeline changes (rolling back a failed attempt) check the database."""
from __future__ import annotations

import secrets
from urllib.parse import urlencode

from tms.db import Database, TaskRepo
from tms.execute.errors import FencingError
from tms.execute.fencing import Fence


def new_fence_key() -> str:
    return secrets.token_urlsafe(24)


def fence_url(service_url: str, task_id: int, fencing_token: int, fence_key: str) -> str:
    query = urlencode({"token": fencing_token, "key": fence_key})
    return f"{service_url.rstrip('/')}/api/v1/tasks/{task_id}/fence?{query}"


def database_fence(database: Database, task_id: int, fencing_token: int) -> Fence:
    def check() -> None:
        with database.transaction() as session:
            if not TaskRepo(session).holds_fence(task_id, fencing_token):
                raise FencingError(f"task {task_id}: fencing token {fencing_token} no longer holds the lease")

    return check
