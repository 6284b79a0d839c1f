"""The manager's own Prometheus endpoint (`TMS_MANAGER_METRICS_PORT`): whether this process leads and at
which epoch. The deployment's metrics read from the database are on the service's `/metrics`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, start_http_server

if TYPE_CHECKING:
    from .process import ManagerService


def serve_metrics(port: int, host: str, service: ManagerService) -> CollectorRegistry:
    registry = CollectorRegistry()
    leading = Gauge("tms_manager_is_leader", "1 while this manager runs the leader's periodic work",
                    registry=registry)
    leading.set_function(lambda: 1.0 if service.leading_epoch is not None else 0.0)
    epoch = Gauge("tms_manager_leading_epoch", "The epoch this manager leads at (0: a standby)", registry=registry)
    epoch.set_function(lambda: float(service.leading_epoch or 0))
    start_http_server(port, addr=host, registry=registry)
    return registry
