"""A table's health read from storage: the digest tms.planning.health decides from (its file groups, its
timeline's digest, its orphan files, its tasks), and the leader's round that keeps the fleet's scores."""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tms.db import Database, HealthRepo, TableRepo, TaskRepo
from tms.fleet.file_group_sample import FileGroupSample
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.orphans import find_orphans
from tms.hudi.timeline.instant import Action, instant_to_datetime
from tms.plan_pass.damage import reported_damaged_files
from tms.planning.digest import TimelineDigest
from tms.planning.health import FileGroupFacts, HealthDigest, TableHealth, table_health
from tms.table_service import TableService

log = logging.getLogger(__name__)
_COUNTED = frozenset({TableService.COMPACTION, TableService.CLEAN})


def health_digest(table: HudiTable, now: datetime, *, tasks_by_state: Mapping[str, int], clean_commits: int,
                  orphan_safety_seconds: float, planner_state: Mapping[str, Any] | None = None,
                  damaged_files: Sequence[str] = (), sample: FileGroupSample | None = None) -> HealthDigest:
    """`planner_state`: the table row's (the planner's digest), to tell a due service it has not planned.
    `damaged_files`: those the table's `table_damaged` alert names (reported_damaged_files). `sample`: the file
    groups and partition listings to judge by (a giant table's live view), else every partition's."""
    table.timeline.check_latest_write()  # a truncated latest commit: the table cannot be read (scored 0)
    digest = TimelineDigest.of(table, None, now, _COUNTED)
    unplanned = _since_attempts(table, now, planner_state)
    finding = ((planner_state or {}).get("findings") or {}).get(TableService.CLEAN)
    deltas = digest.counted.get(TableService.COMPACTION) or []
    orphans = find_orphans(table, now=now.timestamp(), safety_seconds=orphan_safety_seconds,
                           listed=sample.listing.files if sample else None)
    stats = sample.groups if sample else table.file_system_view().file_group_stats()
    groups = [FileGroupFacts(g.partition, g.file_id, g.base_size or 0, g.log_count or 0, g.log_bytes or 0)
              for g in stats]
    return HealthDigest(
        is_mor=table.config.is_mor, file_groups=groups,
        oldest_uncompacted=instant_to_datetime(deltas[0], digest.zone) if deltas else None,
        writes_since_clean=len(digest.counted.get(TableService.CLEAN) or []), clean_commits=clean_commits,
        failed_plans=tasks_by_state.get("FAILED", 0),
        held_plans=tasks_by_state.get("BLOCKED", 0) + len(digest.held),
        orphan_files=len(orphans), orphan_bytes=sum(o.size for o in orphans), damaged_files=tuple(damaged_files),
        writes_since_clean_attempt=unplanned.get(TableService.CLEAN),
        deltas_since_compaction_attempt=unplanned.get(TableService.COMPACTION),
        clean_finding=f"(at {finding[0]}): {finding[1]}" if finding else None,
        **_archive_counts(table, now, planner_state))


def _archive_counts(table: HudiTable, now: datetime, planner_state: Mapping[str, Any] | None) -> dict[str, int | None]:
    """The completed commits on the active timeline and the planner's count at its last archival plan or attempt,
    when the planner counts archival for the table (its stored digest has counted commits)."""
    stored = TimelineDigest.from_state(dict(planner_state), frozenset((planner_state or {}).get("counted") or ())) \
        if planner_state else None
    if stored is None or not stored.commits:
        return {}
    digest = TimelineDigest.of(table, stored, now, frozenset({TableService.ARCHIVE}))
    return {"archive_commits": digest.commits, "archive_attempted_at": digest.archive_attempted_at}


# The plans whose pending instant means the service is planned.
_PLAN_ACTIONS: dict[str, tuple[str, ...]] = {TableService.CLEAN: (Action.CLEAN,),
                                             TableService.COMPACTION: (Action.COMPACTION, Action.LOG_COMPACTION)}


def _since_attempts(table: HudiTable, now: datetime, planner_state: Mapping[str, Any] | None) -> dict[str, int]:
    """Per service of _COUNTED the planner counts, with no plan of it pending: what its trigger counted on the
    timeline since the planner's last plan or empty attempt (its stored digest's attempts carried over)."""
    stored = TimelineDigest.from_state(dict(planner_state), frozenset((planner_state or {}).get("counted") or ())) \
        if planner_state else None
    if stored is None:
        return {}
    services = frozenset(stored.counted) & _COUNTED
    digest = TimelineDigest.of(table, stored, now, services)
    return {s: len(digest.counted[s]) for s in services if not table.timeline.pending(_PLAN_ACTIONS[s])}


def reasons_out(health: TableHealth) -> list[dict[str, object]]:
    return [{"kind": r.kind, "penalty": r.penalty, "message": r.message} for r in health.reasons]


def score_tables(database: Database, table_ids: list[int], now: datetime, *, clean_commits: int,
                 orphan_safety_seconds: float, context: HudiContext = DEFAULT_CONTEXT) -> dict[int, TableHealth]:
    """Score each table (read with `context`) and record it; a table that cannot be read scores 0 with the
    reason."""
    scored = {}
    for table_id in table_ids:
        with database.transaction() as session:
            row = TableRepo(session).get(table_id)
            base_path, policy = row.base_path, row.policy
            planner_state = row.planner_state
            tasks = TaskRepo(session).health_counts(table_id)
            damaged = reported_damaged_files(session, table_id)
        digest: HealthDigest | None = None
        try:
            digest = health_digest(HudiTable.load(base_path, context=context), now, tasks_by_state=tasks,
                                   clean_commits=clean_commits, orphan_safety_seconds=orphan_safety_seconds,
                                   planner_state=planner_state, damaged_files=damaged)
            health = table_health(digest, policy, now)
            reasons = reasons_out(health)
            status = health.status
        except Exception as exc:  # noqa: BLE001 (any storage error: the table cannot be read now)
            health = TableHealth(score=0)
            reasons, status = [{"kind": "unreadable", "penalty": 100, "message": f"cannot read the table: {exc}"}], \
                "error"
        with database.transaction() as session:
            repo = HealthRepo(session)
            repo.record(table_id, score=health.score, status=status, reasons=reasons, checked_at=now)
            repo.record_sample(table_id, sampled_at=now, score=health.score, status=status, **_backlog(digest, now))
        scored[table_id] = health
    return scored


def _backlog(digest: HealthDigest | None, now: datetime) -> dict[str, Any]:
    """What a sample keeps of the backlog (unknown for a table that could not be read)."""
    if digest is None:
        return {"log_bytes": None, "log_files": None, "oldest_uncompacted_seconds": None}
    return {"log_bytes": sum(g.log_bytes for g in digest.file_groups),
            "log_files": sum(g.log_count for g in digest.file_groups),
            "oldest_uncompacted_seconds": (now - digest.oldest_uncompacted).total_seconds()
            if digest.oldest_uncompacted is not None else None}


def score_stalest(database: Database, now: datetime, *, batch: int, clean_commits: int,
                  orphan_safety_seconds: float, context: HudiContext = DEFAULT_CONTEXT) -> dict[int, TableHealth]:
    """The leader's round: score the `batch` tables checked longest ago (the retention, manager/retention.py,
    forgets old samples)."""
    with database.transaction() as session:
        ids = HealthRepo(session).stalest(batch)
    return score_tables(database, ids, now, clean_commits=clean_commits, orphan_safety_seconds=orphan_safety_seconds,
                        context=context)
