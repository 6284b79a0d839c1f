"""The data of each dashboard page, read through the repositories (and the table view) the HTTP API uses."""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from tms import display
from tms.backup.requests import store_of
from tms.config import Settings
from tms.db import (
    BUILTIN,
    AlertRepo,
    BackupTaskRepo,
    EngineRepo,
    EventRepo,
    HealthRepo,
    InstanceRepo,
    QueueRepo,
    RolloutRepo,
    ShadowRunRepo,
    TableRecord,
    TableRepo,
    TaskRepo,
    TaskState,
    TemplateRepo,
)
from tms.errors import ONE_LINE_ERRORS
from tms.hudi.context import HudiContext
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.inspect import human_size
from tms.hudi.table.savepoint import read_savepoint
from tms.hudi.timeline.instant import Action
from tms.plan_pass.damage import reported_damaged_files

from ..table_view import live_view, planner_outlook, ttl_schedule
from . import charts
from .table_facts import TableFacts, read_table_facts

PAGE_SIZE = 25
TABLES_SCANNED = 200  # tables whose health the tables page and the overview compute (the first by id)
HEALTH_SECONDS = 10.0  # how long a table's facts are reused by list pages (they read storage)
TASK_STATES = [s.value for s in TaskState]
PLAN_ACTIONS = (Action.COMPACTION, Action.CLUSTERING, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK)


@dataclass
class TableRow:
    table: TableRecord
    health: str
    reasons: list[str]
    facts: TableFacts


class _RowCache:
    """List pages poll: a table's storage facts are reused for a few seconds while its row is unchanged."""

    def __init__(self) -> None:
        self._rows: dict[tuple[Any, ...], tuple[float, TableRow]] = {}

    def get(self, key: tuple[Any, ...]) -> TableRow | None:
        hit = self._rows.get(key)
        return hit[1] if hit and hit[0] > time.monotonic() else None

    def put(self, key: tuple[Any, ...], row: TableRow) -> None:
        if len(self._rows) > 4 * TABLES_SCANNED:
            self._rows.clear()
        self._rows[key] = (time.monotonic() + HEALTH_SECONDS, row)


_ROW_CACHE = _RowCache()


def table_row(session: Session, table: TableRecord, context: HudiContext) -> TableRow:
    tasks_repo = TaskRepo(session)
    by_state = tasks_repo.health_counts(table.id)
    damaged = reported_damaged_files(session, table.id)
    key = (table.id, table.updated_at, tuple(sorted(by_state.items())), tuple(damaged))
    cached = _ROW_CACHE.get(key)
    if cached is not None:
        return cached
    view = live_view(table.base_path, table.policy, by_state, table.enabled,
                     damaged_files=damaged, context=context)
    waiting: list = []
    for state in (TaskState.RUNNING, TaskState.RUNNABLE, TaskState.BLOCKED, TaskState.PENDING):
        waiting += tasks_repo.in_state(table.id, state) if by_state.get(state.value) else []
    facts = read_table_facts(table, waiting, with_timeline=False, context=context)
    row = TableRow(table=table, health=view["health"].status, reasons=view["health"].reasons, facts=facts)
    _ROW_CACHE.put(key, row)
    return row


def table_rows(session: Session, context: HudiContext, *, name: str | None = None, health: str | None = None,
               table_type: str | None = None, enabled: bool | None = None) -> list[TableRow]:
    tables, _ = TableRepo(session).find(name=name or None, table_type=table_type or None, enabled=enabled,
                                        limit=TABLES_SCANNED)
    rows = [table_row(session, t, context) for t in tables]
    return [r for r in rows if not health or r.health == health]


def tasks_over_time(session: Session, now: datetime, hours: int = 24) -> charts.Chart:
    start = (now - timedelta(hours=hours - 1)).replace(minute=0, second=0, microsecond=0)
    buckets: dict[datetime, dict[str, int]] = {start + timedelta(hours=h): {} for h in range(hours)}
    for hour, state, count in TaskRepo(session).created_by_hour(start):
        at = hour.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        if at in buckets:
            buckets[at][state] = buckets[at].get(state, 0) + count
    return charts.stacked_columns([(f"{at:%H}:00", counts) for at, counts in buckets.items()], TASK_STATES)


def queue_usage(session: Session) -> list[dict[str, Any]]:
    running = TaskRepo(session).running_by_queue()
    return [{"queue": q, "running": running.get(q.name, 0),
             "percent": min(100, round(100 * running.get(q.name, 0) / max(q.capacity, 1)))}
            for q in QueueRepo(session).list()]


def overview(session: Session, now: datetime, context: HudiContext) -> dict[str, Any]:
    rows = table_rows(session, context)
    by_health = {status: sum(1 for r in rows if r.health == status) for status in ("ok", "warning", "error")}
    alerts, firing = AlertRepo(session).find(open_only=True, limit=10)
    return {"by_health": by_health, "tables": len(rows), "unhealthy": [r for r in rows if r.health != "ok"][:10],
            "tasks_chart": tasks_over_time(session, now), "task_counts": TaskRepo(session).counts_by_state(),
            "queues": queue_usage(session), "alerts": alerts, "firing": firing,
            "instances": InstanceRepo(session).list()}


def file_group_charts(facts: TableFacts) -> tuple[charts.Chart, charts.Chart]:
    sizes = charts.histogram(facts.file_group_bytes, bins=10, label=lambda v: human_size(int(v)), css="size")
    logs = charts.histogram(facts.log_counts, bins=16, label=lambda v: str(int(v)), integer=True, css="logs")
    return sizes, logs


def table_detail(session: Session, table_id: int, settings: Settings, context: HudiContext) -> dict[str, Any]:
    table = TableRepo(session).get(table_id)
    tasks_repo = TaskRepo(session)
    by_state = tasks_repo.counts_by_state(table_id=table_id)
    tasks, task_total = tasks_repo.find(table_id=table_id, limit=PAGE_SIZE)
    policy = table.policy
    # One reading of the table for the whole page: its last and next service and its pending plans agree.
    try:
        hudi: HudiTable | None = HudiTable.load(table.base_path, context=context)
    except Exception:  # any storage or format error: each part of the page says it
        hudi = None
    view = live_view(table.base_path, policy, tasks_repo.health_counts(table_id), table.enabled,
                     ttl_schedule(session, table_id, policy),
                     hudi_engine=RolloutRepo(session).hudi_engine_for(queue=table.queue, database=table.database,
                                                                      table=table.name),
                     clean_commits=settings.planner.clean_commits, planner_state=table.planner_state, table=hudi,
                     planner_services=frozenset(settings.planner.services),
                     damaged_files=reported_damaged_files(session, table_id), context=context)
    facts = read_table_facts(table, [t for t in tasks if t.state in ("RUNNING", "RUNNABLE", "BLOCKED", "PENDING")],
                             with_timeline=True, table=hudi, context=context)
    held = tasks_repo.in_state(table_id, TaskState.BLOCKED)
    alerts, alert_total = AlertRepo(session).find(table_id=table_id, limit=PAGE_SIZE)
    size_chart, log_chart = file_group_charts(facts)
    savepoints, savepoints_error = table_savepoints(table.base_path, context)
    own = table.own_settings or {}
    return {"table": table, "policies": table.policy.options(),
            "explicit_policies": own.get("policies") or {}, "concurrency_options": table.concurrency_options,
            "own_concurrency_options": own.get("concurrency_options") or {},
            "sources": TableRepo(session).effective(table).sources,
            "view": view, "facts": facts, "services": planner_outlook(table.planner_state, settings),
            "timeline_chart": charts.timeline_chart(facts.timeline), "size_chart": size_chart,
            "log_chart": log_chart, "backlog_chart": table_backlog(session, table_id, datetime.now(UTC)),
            "tasks": tasks, "task_total": task_total, "tasks_by_state": by_state,
            "pending_plans": [i for i in view["pending_instants"] if i.action in PLAN_ACTIONS], "held": held,
            "alerts": alerts, "alert_total": alert_total, "queues": [q.name for q in QueueRepo(session).list()],
            "savepoints": savepoints, "savepoints_error": savepoints_error,
            "backups": table_backups(session, table, context),
            "last_event_at": EventRepo(session).last_received_at(table_id)}


@dataclass(frozen=True)
class SavepointRow:
    instant: str
    by: str
    made_at: datetime
    files: int
    comments: str


def table_savepoints(base_path: str, context: HudiContext) -> tuple[list[SavepointRow], str | None]:
    """The table's savepoints, newest first, or why they cannot be read now."""
    try:
        table = HudiTable.load(base_path, context=context)
        out = []
        for s in reversed(table.timeline.savepoints()):
            meta = read_savepoint(table, s.timestamp)
            out.append(SavepointRow(s.timestamp, meta.savepointed_by,
                                    datetime.fromtimestamp(meta.savepointed_at / 1000, UTC),
                                    sum(len(p.savepoint_data_file) for p in meta.partition_metadata.values()),
                                    meta.comments))
        return out, None
    except Exception as exc:  # noqa: BLE001 (storage errors of any backend: shown, never raised)
        return [], f"cannot read the savepoints: {exc}"


def table_backups(session: Session, table: TableRecord, context: HudiContext) -> dict[str, Any]:
    """The table's backup policy, the versions its destination keeps (read from their manifests) and its newest
    backup tasks; `error` when the destination cannot be read."""
    policy = table.policy
    out: dict[str, Any] = {"policy": policy if policy.backup_destination else None, "versions": [], "error": None,
                           "tasks": BackupTaskRepo(session).recent(table.id, limit=5)}
    if policy.backup_destination:
        try:
            out["versions"] = store_of(table, context).manifests()
        except ONE_LINE_ERRORS + (OSError, ValueError) as exc:  # a destination down or unreadable: said, not fatal
            out["error"] = f"cannot read the backups: {exc}"
    return out


def task_detail(session: Session, task_id: int) -> dict[str, Any]:
    repo = TaskRepo(session)
    task = repo.get(task_id)
    return {"task": task, "attempts": repo.attempts(task_id), "table": TableRepo(session).get(task.table_id)}


def table_names(session: Session, table_ids: set[int]) -> dict[int, str]:
    repo = TableRepo(session)
    names = {}
    for table_id in table_ids:
        try:
            table = repo.get(table_id)
        except LookupError:
            continue
        names[table_id] = f"{table.database}.{table.name}"
    return names


def table_named(session: Session, ref: str) -> int | None:
    """The id of the one table `ref` names (its id, name or database.name), None when none or several do."""
    if ref.isdigit():
        return int(ref)
    database, _, name = ref.rpartition(".")
    found, _ = TableRepo(session).find(name=name, database=database or None, limit=2, count=False)
    exact = [t.id for t in found if t.name == name]
    if len(exact) != 1:  # a substring match, or several tables of that name
        found, _ = TableRepo(session).find(name=name, database=database or None, limit=500, count=False)
        exact = [t.id for t in found if t.name == name]
    return exact[0] if len(exact) == 1 else None


def duration(start: datetime | None, end: datetime | None, now: datetime) -> str:
    if start is None:
        return ""
    text = display.duration(max(((end or now) - start).total_seconds(), 0))
    return text if end else f"{text} (running)"


def _hours(now: datetime, hours: int) -> list[datetime]:
    start = (now - timedelta(hours=hours - 1)).astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return [start + timedelta(hours=h) for h in range(hours)]


def fleet_trends(session: Session, now: datetime, hours: int = 24) -> tuple[charts.Chart, charts.Chart]:
    """The fleet over the last `hours`: tables per health status, and pending log bytes, per hour (each table
    as its last score in the hour showed it)."""
    slots = _hours(now, hours)
    by_hour = {h.hour.astimezone(UTC): h for h in HealthRepo(session).fleet_by_hour(slots[0])}
    statuses = [(f"{at:%H}:00", by_hour[at].tables_by_status if at in by_hour else {}) for at in slots]
    backlog = [(f"{at:%H}:00", {"log-bytes": by_hour[at].log_bytes} if at in by_hour else {}) for at in slots]
    return (charts.stacked_columns(statuses, ("ok", "warning", "error"), half=True),
            charts.stacked_columns(backlog, ("log-bytes",), value=lambda n: human_size(n), half=True))


def table_backlog(session: Session, table_id: int, now: datetime, hours: int = 24) -> charts.Chart:
    """A table's pending log bytes per hour (its last score in each hour)."""
    slots = _hours(now, hours)
    last: dict[datetime, int] = {}
    for sample in HealthRepo(session).samples(table_id, slots[0]):
        if sample.log_bytes is not None:
            last[sample.sampled_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)] = sample.log_bytes
    return charts.stacked_columns([(f"{at:%H}:00", {"log-bytes": last[at]} if at in last else {}) for at in slots],
                                  ("log-bytes",), value=lambda n: human_size(n))


def fleet_board(session: Session, now: datetime, limit: int = PAGE_SIZE) -> dict[str, Any]:
    """The fleet page: tables by their last health status, the worst first with their reasons, the fleet's
    health and backlog over the last day, and the policy templates with the tables each applies to."""
    health = HealthRepo(session)
    templates = TemplateRepo(session)
    counts = templates.table_counts()
    health_chart, backlog_chart = fleet_trends(session, now)
    return {"by_health": health.by_status(), "unscored": health.unscored(), "worst": health.worst(limit),
            "health_chart": health_chart,
            "backlog_chart": backlog_chart,
            "templates": [{"template": t, "tables": counts.get(t.name, 0)} for t in templates.list()]}


def engine_board(session: Session, now: datetime) -> dict[str, Any]:
    """The engines with their results of the last day, and the rollout rules with each engine's results since
    the rule was put (what the dashboard's engines page shows)."""
    engines = EngineRepo(session)
    day = engines.results(since=now - timedelta(days=1))
    shadow_runs = ShadowRunRepo(session)
    rules = [{"rule": r, "results": engines.results(since=r.since, rollout=r.name),
              "shadow": shadow_runs.results(r.name, since=r.since) if r.shadow else None}
             for r in RolloutRepo(session).list()]
    return {"engines": [{"engine": e, "results": day.get(e.name)} for e in engines.list()],
            "builtin": day.get(BUILTIN), "rules": rules}

