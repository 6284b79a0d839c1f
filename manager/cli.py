"""`tms manager`: run the manager role. Mounted on the `tms` app by `register(app)`."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import typer

from tms.config import load_settings

if TYPE_CHECKING:
    from tms.db import Database


def manager() -> None:
    """Elect one leader among the running managers (database lease); the leader retries failed tasks,
    reconciles tasks with the timelines, raises and resolves alerts, sends webhooks, and asks the planners
    for their periodic trigger and reconciliation scan."""
    from tms.instance import run_role

    from .metrics import serve_metrics
    from .process import ManagerService

    settings = load_settings()

    def make(database: Database) -> ManagerService:
        service = ManagerService(database, settings)
        if settings.manager.metrics_port is not None:  # on the interface the service listens on
            serve_metrics(settings.manager.metrics_port, settings.service.host, service)
        return service

    # A run skipped because the last one still works is normal here: not worth a line each time.
    run_role(settings, make, quiet_loggers={"apscheduler": logging.ERROR})


def register(app: typer.Typer) -> None:
    app.command("manager")(manager)
