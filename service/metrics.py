"""Prometheus metrics: events by kind and result, request latency by route, task counts by state."""
from __future__ import annotations

import functools
import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from starlette.types import ASGIApp, Receive, Scope, Send

from tms.db import Database, TaskRepo, TaskState

from .cluster_metrics import ClusterCollector
from .engine_metrics import EngineCollector

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _TaskStateCollector:
    """Task counts read from the database at scrape time (every instance reports the same totals)."""

    def __init__(self, database: Database):
        self.database = database

    def collect(self):
        family = GaugeMetricFamily("tms_tasks", "Tasks by state", labels=["state"])
        try:
            with self.database.transaction() as session:
                counts = TaskRepo(session).counts_by_state()
        except Exception:  # a scrape must not fail because the database is briefly unreachable
            return
        for state in TaskState:
            family.add_metric([state.value], counts.get(state.value, 0))
        yield family


class Metrics:
    def __init__(self, database: Database):
        self.registry = CollectorRegistry()
        self.events = Counter("tms_events", "Events received, by kind (source) and result",
                              ["kind", "result"], registry=self.registry)
        self._event_counts = functools.cache(self.events.labels)  # a label look-up costs more than the count
        self.latency = Histogram("tms_http_request_duration_seconds", "HTTP request latency by route",
                                 ["method", "route", "status"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.registry.register(_TaskStateCollector(database))
        self.registry.register(ClusterCollector(database))
        self.registry.register(EngineCollector(database))

    def count_events(self, kind: str, result: str, n: int = 1) -> None:
        if n:
            self._event_counts(kind, result).inc(n)


class LatencyMiddleware:
    """Times every HTTP request, labelled by its route template (not the raw path, which would
    make one series per table id)."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_with_status(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            self.metrics.latency.labels(scope["method"], path, str(status)).observe(time.perf_counter() - start)
