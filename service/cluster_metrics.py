"""Prometheus metrics of the whole deployment, read from the database at scrape time: every role's work as
the database records it (tasks by state, action and queue; task duration and wait; retries; alerts firing
by type; the leader and its epoch; queues' running jobs against capacity; the planners' lag; per table, the
pending log files, the oldest pending instant and its newest backup). The service exposes them on its
`/metrics`, so one scrape target serves them however many processes run; each process adds its own process
metrics."""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from tms.db import Database
from tms.db.read_models import cluster_rows

DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400)


class ClusterCollector:
    def __init__(self, database: Database):
        self.database = database

    def collect(self) -> Iterator[Metric]:
        rows = cluster_rows(self.database)
        if rows is None:
            return
        tasks = GaugeMetricFamily("tms_tasks_by", "Tasks by state, action and queue",
                                  labels=["state", "action", "queue"])
        for state, action, queue, count in rows["tasks"]:
            tasks.add_metric([state, action, queue], count)
        yield tasks
        retries = GaugeMetricFamily("tms_task_retries", "Attempts after the first, by action", labels=["action"])
        for action, count in rows["retries"]:
            retries.add_metric([action], int(count or 0))
        yield retries
        yield histogram_by_label(HistogramMetricFamily("tms_task_duration_seconds",
                                               "Run time of the tasks succeeded in the last day", labels=["action"]),
                         rows["durations"])
        yield histogram_by_label(HistogramMetricFamily("tms_task_wait_seconds",
                                               "Wait from creation to start of tasks started in the last day",
                                               labels=["action"]),
                         rows["waits"])
        alerts = GaugeMetricFamily("tms_alerts_firing", "Firing alerts by type and severity",
                                   labels=["type", "severity"])
        for kind, severity, count in rows["alerts"]:
            alerts.add_metric([kind, severity], count)
        yield alerts
        leader = GaugeMetricFamily("tms_manager_leader", "1 while a manager holds the leader lease",
                                   labels=["instance"])
        epoch = GaugeMetricFamily("tms_manager_epoch", "The leader lease's epoch")
        for holder, value, live in rows["leader"]:
            leader.add_metric([holder], 1 if live else 0)
            epoch.add_metric([], value)
        yield leader
        yield epoch
        running = GaugeMetricFamily("tms_queue_running", "Jobs running per queue", labels=["queue"])
        capacity = GaugeMetricFamily("tms_queue_capacity", "Jobs a queue runs at once", labels=["queue"])
        for name, cap, count in rows["queues"]:
            running.add_metric([name], count)
            capacity.add_metric([name], cap)
        yield running
        yield capacity
        yield GaugeMetricFamily("tms_planner_lag_seconds", "Age of the oldest unprocessed event",
                                value=float(rows["lag"][0][0] if rows["lag"] else 0))
        yield from _table_metrics(rows["tables"])
        yield from _health_metrics(rows["health"])
        yield from _backup_metrics(rows["backups"])


def histogram_by_label(family: HistogramMetricFamily, samples: Sequence[Any]) -> HistogramMetricFamily:
    """`family` with one histogram per label value of the (label value, seconds) samples (None: left out)."""
    by_action: dict[str, list[float]] = {}
    for action, seconds in samples:
        if seconds is not None:
            by_action.setdefault(action, []).append(float(seconds))
    for action, values in by_action.items():
        buckets = [(str(b), sum(1 for v in values if v <= b)) for b in DURATION_BUCKETS]
        buckets.append(("+Inf", len(values)))
        family.add_metric([action], buckets, sum(values))
    return family


def _table_metrics(tables: Sequence[Any]) -> Iterator[Metric]:
    """From each table's planner digest (what the planner last saw of its timeline): the delta commits whose
    log files wait for a compaction, and the oldest write still pending."""
    logs = GaugeMetricFamily("tms_table_uncompacted_delta_commits", "Delta commits (log files) since the last "
                             "compaction, per table", labels=["table_id", "database", "table"])
    oldest = GaugeMetricFamily("tms_table_oldest_pending_instant_age_seconds", "Age of the oldest requested or "
                               "inflight write, per table", labels=["table_id", "database", "table"])
    now = time.time()
    for table_id, database, name, uncompacted, first_pending in tables:
        labels = [str(table_id), database, name]
        if uncompacted is not None:
            logs.add_metric(labels, float(uncompacted))
        oldest.add_metric(labels, now - first_pending if first_pending is not None else 0.0)
    yield logs
    yield oldest


def _health_metrics(health: Sequence[Any]) -> Iterator[Metric]:
    """Each table's last health score, and the tables per health status (what the fleet view shows)."""
    score = GaugeMetricFamily("tms_table_health_score", "The table's last health score (0-100; below 80: warning)",
                              labels=["table_id", "database", "table"])
    by_status = GaugeMetricFamily("tms_tables_by_health", "Tables by their last health status", labels=["status"])
    counts = dict.fromkeys(("ok", "warning", "error"), 0)
    for table_id, database, name, value, status in health:
        score.add_metric([str(table_id), database, name], float(value))
        counts[status] = counts.get(status, 0) + 1
    for status, count in counts.items():
        by_status.add_metric([status], count)
    yield score
    yield by_status


def _backup_metrics(backups: Sequence[Any]) -> Iterator[Metric]:
    """Each table's newest backup that succeeded (tms.backup): when it finished, its version, the bytes it copied."""
    labels = ["table_id", "database", "table"]
    last = GaugeMetricFamily("tms_backup_last_success_timestamp_seconds", "When the table's newest backup that "
                             "succeeded finished (Unix time)", labels=labels)
    version = GaugeMetricFamily("tms_backup_last_version", "The version number of that backup", labels=labels)
    copied = GaugeMetricFamily("tms_backup_last_bytes_copied", "The bytes that backup copied (what changed since "
                               "the version before it)", labels=labels)
    for table_id, database, name, finished, number, bytes_copied in backups:
        values = [str(table_id), database, name]
        last.add_metric(values, float(finished))
        version.add_metric(values, float(number))
        copied.add_metric(values, float(bytes_copied))
    yield last
    yield version
    yield copied
