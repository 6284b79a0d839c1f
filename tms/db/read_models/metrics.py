"""The rows the Prometheus collectors of the service's `/metrics` show, read at scrape time in one connection:
the whole deployment (service.cluster_metrics) and the engines (service.engine_metrics). Plain SQL: they are
aggregates PostgreSQL computes, never model objects."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text

from ..engine import Database

_CLUSTER = {
    "tasks": "SELECT state, service, coalesce(queue, '') AS queue, count(*) FROM tasks GROUP BY 1, 2, 3",
    "retries": "SELECT service, sum(greatest(attempt - 1, 0)) FROM tasks GROUP BY 1",
    "durations": "SELECT service, extract(epoch FROM finished_at - started_at) FROM tasks "
                 "WHERE state = 'SUCCEEDED' AND finished_at > now() - interval '1 day' AND started_at IS NOT NULL",
    "waits": "SELECT service, extract(epoch FROM started_at - created_at) FROM tasks "
             "WHERE started_at > now() - interval '1 day'",
    "alerts": "SELECT kind, severity, count(*) FROM alerts WHERE resolved_at IS NULL GROUP BY 1, 2",
    "leader": "SELECT coalesce(holder, ''), epoch, expires_at > now() FROM leases WHERE name = 'manager'",
    "queues": "SELECT q.name, q.capacity, (SELECT count(*) FROM tasks t WHERE t.state = 'RUNNING' "
              "AND t.queue = q.name) FROM queues q",
    "lag": "SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0) FROM events WHERE processed_at IS NULL",
    # Of each table's planner digest, only the two figures its metrics show (computed by the server: a digest
    # holds up to a thousand instants per service, and there may be 100,000 tables).
    "tables": "SELECT id, database, name, jsonb_array_length(planner_state->'counted'->'compaction'), "
              "(SELECT min(value::float) FROM jsonb_each_text(planner_state->'pending_writes')) "
              "FROM tables WHERE enabled",
    # Each table's last health score (the manager's leader keeps them: tms.fleet.health).
    "health": "SELECT h.table_id, t.database, t.name, h.score, h.status FROM table_health h "
              "JOIN tables t ON t.id = h.table_id",
    # Each table's newest backup that succeeded: when, the version, and the bytes it copied (its job's result).
    "backups": "SELECT DISTINCT ON (t.table_id) t.table_id, r.database, r.name, extract(epoch FROM t.finished_at), "
               "coalesce((a.result->>'version')::bigint, 0), coalesce((a.result->>'bytes_copied')::bigint, 0) "
               "FROM tasks t JOIN tables r ON r.id = t.table_id LEFT JOIN task_attempts a ON a.task_id = t.id "
               "AND a.outcome = 'SUCCEEDED' WHERE t.service = 'backup' AND t.state = 'SUCCEEDED' "
               "ORDER BY t.table_id, t.finished_at DESC, t.id DESC",
}

_ENGINES = {
    "attempts": "SELECT coalesce(engine, 'builtin'), outcome, count(*) FROM task_attempts "
                "WHERE outcome IN ('SUCCEEDED', 'FAILED') AND finished_at > now() - interval '1 day' GROUP BY 1, 2",
    "durations": "SELECT coalesce(engine, 'builtin'), extract(epoch FROM finished_at - started_at) FROM task_attempts "
                 "WHERE outcome IN ('SUCCEEDED', 'FAILED') AND finished_at > now() - interval '1 day'",
    "rollouts": "SELECT name, coalesce(canary_engine, ''), state, "
                "CASE WHEN state = 'active' THEN canary_percent ELSE 0 END FROM rollouts",
}


def _scrape(database: Database, queries: dict[str, str]) -> dict[str, Sequence[Any]] | None:
    """Each query's rows, read in one connection at scrape time; None when the database cannot be read (a scrape
    must not fail because the database is briefly unreachable)."""
    try:
        with database.engine.connect() as connection:
            return {name: connection.execute(text(sql)).all() for name, sql in queries.items()}
    except Exception:
        return None


def cluster_rows(database: Database) -> dict[str, Sequence[Any]] | None:
    """tasks (state, service, queue, count), retries, durations, waits (service, seconds), alerts firing, the
    leader lease, queues (name, capacity, running), the planners' lag, two figures of each table's digest, and
    each table's newest backup (table id, database, name, finished at, version, bytes copied)."""
    return _scrape(database, _CLUSTER)


def engine_rows(database: Database) -> dict[str, Sequence[Any]] | None:
    """attempts (engine, outcome, count) and durations (engine, seconds) of the last day, and the rollouts."""
    return _scrape(database, _ENGINES)
