"""Prometheus metrics of the engines, read from the database at scrape time: per engine, the attempts of the
last day that succeeded or failed, its success ratio and its run times; per rollout rule, the canary's share
of the tasks (0 once rolled back). Attempts run by the worker's own job code count as engine `builtin`."""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from tms.db import Database
from tms.db.read_models import engine_rows

from .cluster_metrics import histogram_by_label


class EngineCollector:
    def __init__(self, database: Database):
        self.database = database

    def collect(self) -> Iterator[Metric]:
        rows = engine_rows(self.database)
        if rows is None:
            return
        attempts = GaugeMetricFamily("tms_engine_attempts", "Attempts finished in the last day, by engine and "
                                     "outcome (SUCCEEDED, FAILED)", labels=["engine", "outcome"])
        totals: dict[str, list[int]] = {}
        for engine, outcome, count in rows["attempts"]:
            attempts.add_metric([engine, outcome], count)
            total = totals.setdefault(engine, [0, 0])
            total[0] += count
            total[1] += count if outcome == "SUCCEEDED" else 0
        yield attempts
        ratio = GaugeMetricFamily("tms_engine_success_ratio", "Succeeded / finished attempts of the last day, "
                                  "by engine", labels=["engine"])
        for engine, (finished, succeeded) in totals.items():
            ratio.add_metric([engine], succeeded / finished)
        yield ratio
        yield histogram_by_label(HistogramMetricFamily("tms_engine_attempt_duration_seconds",
                                                       "Run time of the attempts finished in the last day, by engine",
                                                       labels=["engine"]), rows["durations"])
        canary = GaugeMetricFamily("tms_rollout_canary_percent", "Share of a rollout rule's tasks sent to its "
                                   "canary (0 once rolled back)", labels=["rollout", "canary_engine", "state"])
        for name, engine, state, percent in rows["rollouts"]:
            canary.add_metric([name, engine, state], percent)
        yield canary
