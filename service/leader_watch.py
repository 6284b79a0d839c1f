"""The service's watch for a leading manager: every `heartbeat_seconds` it fires or resolves the `no_leader`
alert and, while no manager leads, sends that alert's webhooks itself (tms.leadership.watch). The service runs
whenever TMS does, so a deployment whose managers are all gone or stuck is still told."""
from __future__ import annotations

import asyncio

from starlette.concurrency import run_in_threadpool

from tms.config import Settings
from tms.db import Database
from tms.leadership import LeaderWatch
from tms.webhooks.delivery import Deliverer


class LeaderWatchLoop:
    def __init__(self, database: Database, settings: Settings):
        self.settings = settings
        self.watch = LeaderWatch(database, settings)
        self.deliverer = Deliverer(settings)
        self._task: asyncio.Task | None = None

    async def _loop(self) -> None:
        while True:
            await run_in_threadpool(self.watch.watch, self.deliverer)
            await asyncio.sleep(self.settings.heartbeat_seconds)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.deliverer.close()
