"""The TMS HTTP service (FastAPI). Stateless: run as many processes as needed against one database.

    uvicorn --factory service.app:create_app      # or: tms serve
"""
from __future__ import annotations

import gc
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI

from tms.config import Settings, load_settings
from tms.db import Database, open_database
from tms.db.intake import IntakeStore
from tms.instance import tms_version
from tms.plan_pass.on_request import OnRequestPlanner
from tms.table_context import table_context

from . import docs, errors, openapi
from .auth import Authenticator
from .body_limit import BodyLimit
from .discovery_admission import callback_admission
from .fence_checks import FenceChecks
from .heartbeat import Heartbeat
from .intake import Intake
from .metrics import LatencyMiddleware, Metrics
from .routers import (
    admin,
    backups,
    discovery,
    engines,
    events,
    fleet,
    health,
    indexes,
    manager,
    savepoints,
    tables,
    tasks,
    templates,
)
from .ui import routes as dashboard

_PLANNED_ON_REQUEST_CACHE = 100  # tables whose loaded timeline the service keeps for requests

DESCRIPTION = """The control plane of TMS, the table management service for Apache Hudi tables.

Authenticate with `Authorization: Bearer <token>` (roles: viewer reads, operator acts on tasks,
admin manages tables, policies, queues and tokens). Writers send events with the `HUDI-CALLBACK-KEY`
header, exactly as Hudi's HTTP commit callback does."""


def create_app(settings: Settings | None = None, database: Database | None = None) -> FastAPI:
    """The app for `settings` (default: from the environment). Without `database`, the configured
    (or embedded) database is opened and migrated to head at startup."""
    settings = settings or load_settings()
    logging.getLogger("tms").setLevel(settings.log_level)
    logging.getLogger("service").setLevel(settings.log_level)
    database = database or open_database(settings)
    metrics = Metrics(database)
    heartbeat = Heartbeat(database, settings)  # its row, and the watch for a leading manager
    intake_store = IntakeStore(database.url, max_connections=settings.db_pool_size)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await intake_store.open()
        heartbeat.start()
        # What exists once started (modules, the app, its caches) lives as long as the process: kept out
        # of the garbage collector's full passes, which otherwise walk it all again and again while
        # requests allocate (a batch of events several times over). Handed back at shutdown.
        gc.freeze()
        yield
        gc.unfreeze()
        app.state.planner.close()  # the cached tables' lock connections (ZooKeeper sessions)
        app.state.fence_checks.close()
        await heartbeat.stop()
        await intake_store.close()

    app = FastAPI(title="TMS", version=tms_version(), description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.table_context = table_context(settings)  # what every route reads tables with
    app.state.database = database
    app.state.metrics = metrics
    own = settings.service
    app.state.authenticator = Authenticator(
        database, admin_token=own.admin_token.get_secret_value() if own.admin_token else None,
        cache_seconds=own.cache_seconds)
    app.state.intake = Intake(intake_store, metrics, cache_seconds=own.cache_seconds,
                              admit=callback_admission(database, settings))
    app.state.heartbeat = heartbeat
    app.state.fence_checks = FenceChecks(database.url)
    # Operators' requests to plan a table now run here, under the table's planning lock (no change feed).
    app.state.planner = OnRequestPlanner.from_settings(database, settings, cached_tables=_PLANNED_ON_REQUEST_CACHE)
    errors.install(app)
    app.add_middleware(BodyLimit, default=own.max_body_bytes, bulk=own.max_bulk_body_bytes)
    app.add_middleware(LatencyMiddleware, metrics=metrics)  # added last: outermost, it times the 413s too
    for module in (events, tables, backups, savepoints, indexes, tasks, admin, engines, manager, discovery,
                   templates, fleet, health):
        app.include_router(module.router)
    openapi.install(app, settings)
    docs.install(app)
    dashboard.install(app)
    return app
