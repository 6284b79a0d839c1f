"""The provisioned Grafana dashboard queries only metrics TMS exports: the metric names in its PromQL are
compared with what a real service app serves at /metrics (on a scratch PostgreSQL), plus any collector a TMS
module registers in prometheus_client's default registry."""
from __future__ import annotations

import importlib
import json
import pkgutil
from types import SimpleNamespace

import pytest
import yaml
from deploy_support import (
    GRAFANA_PROVISIONING,
    PROMETHEUS_CONFIG,
    declared_metric_families,
    load_dashboard,
    promql_metric_names,
    series_names,
    unknown_metrics,
)

# Series Prometheus itself adds for every target it scrapes.
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
ROLE_PACKAGES = ("tms", "service", "planner", "worker", "manager", "jobs", "standalone")


@pytest.fixture(scope="module")
def service_metrics() -> set[str]:
    """Series names a scrape of a real service's /metrics yields."""
    from fastapi.testclient import TestClient
    from prometheus_client.parser import text_string_to_metric_families

    from service.app import create_app
    from tms.config import Settings
    from tms.db import Database
    from tms.db.testing import scratch_database

    with scratch_database() as url:
        database = Database(url)
        try:
            app = create_app(Settings(database_url=url, heartbeat_seconds=3600), database)
            with TestClient(app) as client:
                client.get("/healthz")  # one request, so the latency histogram has a series
                response = client.get("/metrics")
                assert response.status_code == 200
                families = list(text_string_to_metric_families(response.text))
        finally:
            database.dispose()
    return series_names(families)


@pytest.fixture(scope="module")
def registered_metrics() -> set[str]:
    """Series of collectors TMS modules register in prometheus_client's default registry on import (a
    role that serves its own /metrics with prometheus_client's helpers)."""
    from prometheus_client import REGISTRY

    for package in ROLE_PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            if info.name.endswith(("__main__", ".conftest")) or ".tests" in info.name:
                continue
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional backend that is not installed
                continue
    families = REGISTRY.collect()
    return {name for name in series_names(families) if name.startswith("tms_")}


@pytest.fixture(scope="module")
def declared_metrics() -> set[str]:
    """Series of the metrics the code constructs by name (e.g. a role's own /metrics endpoint, made when the
    role starts)."""
    families = [SimpleNamespace(name=name, type=kind, samples=[])
                for name, kind in declared_metric_families(ROLE_PACKAGES)]
    return series_names(families)


@pytest.fixture(scope="module")
def exported(service_metrics, registered_metrics, declared_metrics) -> set[str]:
    return service_metrics | registered_metrics | declared_metrics | PROMETHEUS_SERIES


def test_the_source_scan_finds_the_services_metrics(service_metrics, declared_metrics):
    """The scan of the code finds what the live service serves (so it would find a role's metrics too)."""
    assert {n for n in service_metrics if n.startswith("tms_")} <= declared_metrics


def test_the_service_exports_the_documented_metrics(service_metrics):
    assert {"tms_events_total", "tms_tasks", "tms_http_request_duration_seconds_bucket",
            "tms_http_request_duration_seconds_count", "tms_http_request_duration_seconds_sum"} <= service_metrics


def test_the_dashboard_queries_only_exported_metrics(exported):
    dashboard = load_dashboard()
    assert unknown_metrics(dashboard, exported) == {}


def _family(series: str) -> str:
    for suffix in ("_total", "_created", "_bucket", "_sum", "_count", "_info"):
        if series.endswith(suffix):
            return series[: -len(suffix)]
    return series


def test_the_dashboard_shows_every_tms_metric(service_metrics):
    """The other way round: each metric family the service exports has a panel (a new metric gets one)."""
    used = set()
    for expr in _all_exprs(load_dashboard()):
        used |= {_family(name) for name in promql_metric_names(expr)}
    exported = {_family(name) for name in service_metrics if name.startswith("tms_")}
    assert exported and exported <= used, f"no panel for {sorted(exported - used)}"


def _all_exprs(dashboard):
    from deploy_support import dashboard_queries
    return [expr for _, expr in dashboard_queries(dashboard)]


def test_a_made_up_metric_is_caught(exported):
    dashboard = load_dashboard()
    dashboard["panels"].append({"type": "row", "title": "Nested", "panels": [
        {"title": "Bogus", "targets": [{"expr": 'sum by (queue) (rate(tms_jobs_made_up_total{queue!=""}[5m]))'}]}]})
    assert unknown_metrics(dashboard, exported) == {"Bogus": {"tms_jobs_made_up_total"}}
    dashboard["templating"] = {"list": [{"type": "query", "name": "table",
                                         "query": {"query": "label_values(tms_table_made_up, table)"}}]}
    assert unknown_metrics(dashboard, exported)["variable table"] == {"tms_table_made_up"}


@pytest.mark.parametrize("expr, names", [
    ('histogram_quantile(0.99, sum by (le, route) (rate(tms_http_request_duration_seconds_bucket[5m])))',
     {"tms_http_request_duration_seconds_bucket"}),
    ('sum(rate(a_total{x="rate(b)"}[1m] offset 5m)) by (job) / on(job) group_left(instance) c', {"a_total", "c"}),
    ("max by (state) (tms_tasks) > bool 0 and ignoring(state) d:recorded:rule", {"tms_tasks", "d:recorded:rule"}),
    ("rate(x[$__rate_interval]) * 1e3 + ${var} - count_over_time(y[1h:5m])", {"x", "y"}),
    ("vector(1)", set()),
])
def test_promql_metric_names(expr, names):
    assert promql_metric_names(expr) == names


def test_panels_use_the_provisioned_datasource():
    datasources = yaml.safe_load((GRAFANA_PROVISIONING / "datasources" / "prometheus.yml").read_text())
    uids = {d["uid"] for d in datasources["datasources"] if d["type"] == "prometheus"}

    def walk(panels):
        for panel in panels:
            if panel.get("type") != "row":
                assert panel["datasource"]["uid"] in uids, panel["title"]
                for target in panel["targets"]:
                    assert target.get("datasource", panel["datasource"])["uid"] in uids
            walk(panel.get("panels") or [])
    walk(load_dashboard()["panels"])


def test_up_is_queried_by_the_scrape_jobs_name():
    jobs = {job["job_name"] for job in yaml.safe_load(PROMETHEUS_CONFIG.read_text())["scrape_configs"]}
    for expr in _all_exprs(load_dashboard()):
        if "up" in promql_metric_names(expr):
            assert any(f'job="{job}"' in expr for job in jobs), expr


def test_the_dashboard_is_valid_json_with_unique_panel_ids():
    dashboard = json.loads((GRAFANA_PROVISIONING.parent / "dashboards" / "tms.json").read_text())
    ids = []

    def walk(panels):
        for panel in panels:
            ids.append(panel["id"])
            walk(panel.get("panels") or [])
    walk(dashboard["panels"])
    assert len(ids) == len(set(ids)) and dashboard["uid"] == "tms"
