"""The service's own instance row: registered on start, refreshed every heartbeat, removed on a
clean stop, so GET /api/v1/instances (and the manager) know which processes are alive."""
from __future__ import annotations

import asyncio
import logging

from starlette.concurrency import run_in_threadpool

from tms.db import Database
from tms.instance import InstanceRow

log = logging.getLogger(__name__)



class Heartbeat:
    def __init__(self, database: Database, *, roles: list[str], interval_seconds: float, info: dict):
        self.database = database
        self.roles = roles
        self.interval = interval_seconds
        self.info = info
        self.row = InstanceRow(database, roles, interval_seconds=interval_seconds)
        self.instance_id = self.row.id
        self._task: asyncio.Task | None = None

    def beat(self) -> None:
        self.row.beat(self.info)

    async def _loop(self) -> None:
        while True:
            try:
                await run_in_threadpool(self.beat)
            except Exception as exc:  # keep beating through database outages
                log.warning("heartbeat failed: %s", exc)
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.row.deregister()
