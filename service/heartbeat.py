"""The service's role loop (tms.instance.RoleLoop), in a thread of its own: at each heartbeat it records its
instance row (registered on start, removed on a clean stop, so GET /api/v1/instances and the manager know which
processes are alive) and, as its turn, watches for a leading manager: it fires or resolves the `no_leader` alert
and, while no manager leads, sends that alert's webhooks itself (tms.leadership.watch). The service runs
whenever TMS does, so a deployment whose managers are all gone or stuck is still told."""
from __future__ import annotations

import threading

from starlette.concurrency import run_in_threadpool

from tms.config import Settings
from tms.db import Database
from tms.instance import RoleLoop
from tms.leadership import LeaderWatch
from tms.webhooks.delivery import Deliverer


class Heartbeat:
    def __init__(self, database: Database, settings: Settings):
        self.loop = RoleLoop(database, ["service"], heartbeat_seconds=settings.heartbeat_seconds)
        self.instance_id = self.loop.id
        self.port = settings.service.port
        self.leader_watch = LeaderWatch(database, settings)
        self.deliverer = Deliverer(settings.manager)
        self._thread: threading.Thread | None = None

    def turn(self) -> None:
        self.leader_watch.watch(self.deliverer)

    def facts(self) -> dict[str, int]:
        return {"port": self.port}

    def beat(self) -> None:
        """Record the row now (raising on a database error)."""
        self.loop.row.beat(self.facts())

    def start(self) -> None:
        self._thread = threading.Thread(target=self.loop.run, args=(self,), kwargs={"finish": self.deliverer.close},
                                        name="service-heartbeat", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Stop the loop and wait for it to deregister (off the event loop: the removal is a transaction)."""
        self.loop.stop()
        if self._thread is not None:
            await run_in_threadpool(self._thread.join)
