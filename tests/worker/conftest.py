"""Fixtures of the worker tests: one scratch PostgreSQL database and one real HTTP service (uvicorn in a
thread, so jobs in child processes can reach its fence endpoint) per session, emptied before each test;
workers started in threads and stopped after each test."""
from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from sqlalchemy import text
from support import TIMEOUT_SCALE, served

from planner.process import PlannerService
from service.app import create_app
from tms.config import Settings
from tms.db import Database, QueueRepo
from tms.db.models import Base
from tms.db.testing import scratch_database
from worker.loop import Worker

ADMIN_TOKEN = "admin-token-for-worker-tests"
CALLBACK_KEY = "callback-key-for-worker-tests"
# Test jobs run without the Spark UI (no port to bind, nothing to show).
LOCAL_SPARK_CONF = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}


@dataclass(frozen=True)
class Service:
    url: str
    app: object
    database: Database
    callback_key: str = CALLBACK_KEY

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    @property
    def callback_url(self) -> str:
        return f"{self.url}/api/v1/hudi/callback"


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    with scratch_database() as url:
        settings = Settings(database_url=url, admin_token=ADMIN_TOKEN, callback_key=CALLBACK_KEY,
                            storage_roots=[str(tmp_path_factory.getbasetemp())], heartbeat_seconds=3600)
        database = Database(url, pool_size=20)
        app = create_app(settings, database)
        with served(app) as url:
            yield Service(url, app, database)
        database.dispose()


@pytest.fixture
def db(service) -> Database:
    """The service's database, emptied (and the service's table cache with it)."""
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with service.database.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    service.app.state.intake.tables.clear()
    return service.database


@pytest.fixture
def local_queue(db):
    """put_queue(name="local", **fields): a queue (default: spark-submit to local[2], two jobs at once)."""

    def put(name: str = "local", **fields):
        values = {"kind": "local", "master": "local[2]", "capacity": 2, "spark_conf": LOCAL_SPARK_CONF,
                  "min_executor_memory_mb": 512, "max_executor_memory_mb": 2048, **fields}
        with db.transaction() as session:
            return QueueRepo(session).put(name, **values)

    return put


@pytest.fixture
def start_worker(db, service, tmp_path):
    """start_worker(**settings) -> a Worker running in a thread (python jobs unless runner="spark")."""
    started: list[tuple[Worker, threading.Thread]] = []

    def start(worker_id: str | None = None, **overrides) -> Worker:
        values = {"database_url": db.url, "data_dir": tmp_path / "worker", "worker_service_url": service.url,
                  "worker_runner": "python", "worker_poll_seconds": 0.2, "worker_lease_seconds": 4 * TIMEOUT_SCALE,
                  "heartbeat_seconds": 3600, "worker_driver_memory_mb": 512, **overrides}
        worker = Worker(db, Settings(**values), worker_id=worker_id)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        started.append((worker, thread))
        return worker

    yield start
    for worker, _ in started:
        worker.stop()
    for _, thread in started:
        thread.join(timeout=60)


class Planners:
    """start_planner(**settings) -> the planner role (tms planner) running in a thread;
    start_planner.stop(planner) -> once no planning pass of it is in flight (it writes no plan after)."""

    def __init__(self, db):
        self.db = db
        self.started: dict[PlannerService, threading.Thread] = {}

    def __call__(self, **overrides) -> PlannerService:
        values = {"database_url": self.db.url, "planner_poll_seconds": 0.2, "planner_tick_seconds": 1,
                  "heartbeat_seconds": 3600, **overrides}
        planner = PlannerService(self.db, Settings(**values))
        thread = threading.Thread(target=planner.run, daemon=True)
        thread.start()
        self.started[planner] = thread
        return planner

    def stop(self, planner: PlannerService) -> None:
        planner.stop()
        self.started[planner].join(timeout=120)
        assert not self.started[planner].is_alive(), "the planner did not end its passes within 120 s"


@pytest.fixture
def start_planner(db):
    planners = Planners(db)
    yield planners
    for planner in planners.started:
        planner.stop()
    for thread in planners.started.values():
        thread.join(timeout=60)
