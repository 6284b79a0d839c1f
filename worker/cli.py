"""`tms worker`: run the worker role. Mounted on the `tms` app by `register(app)`."""
from __future__ import annotations

from typing import Annotated

import typer

from tms.config import load_settings


def worker(slots: Annotated[int | None, typer.Option(help="Jobs run at once [TMS_WORKER_SLOTS]")] = None,
           runner: Annotated[str | None, typer.Option(
               help="spark (spark-submit) or python (no Spark) [TMS_WORKER_RUNNER]")] = None,
           service_url: Annotated[str | None, typer.Option(
               help="The service URL jobs check their lease at [TMS_WORKER_SERVICE_URL]")] = None) -> None:
    """Claim runnable tasks, submit their Spark jobs sized to their plans, and track them to the end."""
    # The role's process (the database, the job supervisor) loads only for `tms worker`.
    from tms.instance import run_role

    from .loop import Worker

    overrides = {k: v for k, v in (("worker_slots", slots), ("worker_runner", runner),
                                   ("worker_service_url", service_url)) if v is not None}
    settings = load_settings(**overrides)
    run_role(settings, lambda database: Worker(database, settings))


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
