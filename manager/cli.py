"""`tms manager`: run the manager role. Mounted on the `tms` app by `register(app)`."""
from __future__ import annotations

import logging
import signal

import typer

from tms.config import load_settings


def manager() -> None:
    """Elect one leader among the running managers (database lease); the leader retries failed tasks,
    restores tasks from the timelines, raises and resolves alerts, sends webhooks, and asks the planners
    for their periodic trigger and reconciliation scan."""
    from tms.db import open_database

    from .metrics import serve_metrics
    from .process import ManagerService

    settings = load_settings()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # A run skipped because the last one still works is normal here: not worth a line each time.
    logging.getLogger("apscheduler").setLevel(max(logging.ERROR, logging.getLogger().level))
    database = open_database(settings)
    service = ManagerService(database, settings)
    if settings.manager_metrics_port is not None:
        serve_metrics(settings.manager_metrics_port, settings.host, service)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: service.stop())
    try:
        service.run()
    finally:
        database.dispose()


def register(app: typer.Typer) -> None:
    app.command("manager")(manager)
