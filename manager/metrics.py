"""The manager's own Prometheus endpoint (`TMS_MANAGER_METRICS_PORT`): whether this process leads and at
which epoch, and the rows of TMS's own history its retention removed. The deployment's metrics read from the
database are on the service's `/metrics`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

if TYPE_CHECKING:
    from .process import ManagerService


def removed_rows_counter() -> Counter:
    """The rows the retention removed while this process led, per kind (a table's name); registered nowhere
    until serve_metrics shows it."""
    return Counter("tms_manager_retention_removed_rows", "Rows of TMS's own history the retention removed, per "
                   "kind (a table's name)", ["kind"], registry=None)


def serve_metrics(port: int, host: str, service: ManagerService) -> CollectorRegistry:
    registry = CollectorRegistry()
    leading = Gauge("tms_manager_is_leader", "1 while this manager runs the leader's periodic work",
                    registry=registry)
    leading.set_function(lambda: 1.0 if service.leading_epoch is not None else 0.0)
    epoch = Gauge("tms_manager_leading_epoch", "The epoch this manager leads at (0: a standby)", registry=registry)
    epoch.set_function(lambda: float(service.leading_epoch or 0))
    registry.register(service.retention_removed)
    start_http_server(port, addr=host, registry=registry)
    return registry
