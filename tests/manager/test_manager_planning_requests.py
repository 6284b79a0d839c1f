"""The leader's periodic planning requests cost what is due: the periodic trigger marks only the enabled
tables whose `tick_due_at` passed, and a scan is asked for as a handful of chunks of table ids, which
planners take (SKIP LOCKED) so that every enabled table is scanned exactly once."""
from __future__ import annotations

from sqlalchemy import select, text

from manager.planning_requests import SCAN_CHUNK_TABLES, request_scans, request_ticks
from planner import runner
from planner.runner import Planner
from tms.db import ScanRequestRepo, TableRepo
from tms.db.models import RegisteredTable
from tms.leadership import LeaderLease
from tms.planning.decisions import PlannerOptions

OPTIONS = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=5)


def _tables(db, count: int) -> list[int]:
    rows = [{"base_path": f"/nowhere/t{i}", "name": f"t{i}", "database": "d", "table_type": "MERGE_ON_READ",
             "table_version": 8} for i in range(count)]
    with db.transaction() as session:
        return TableRepo(session).register_many(rows)


def _leader(db) -> tuple[LeaderLease, int]:
    lease = LeaderLease(db, "leader", lease_seconds=60, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    assert epoch is not None
    return lease, epoch


def test_the_leader_marks_only_the_enabled_tables_whose_tick_time_passed(db):
    ids = _tables(db, 9)
    due, future, never, disabled, marked = ids[:3], ids[3:5], ids[5:7], ids[7], ids[8]
    with db.transaction() as session:
        session.execute(text("UPDATE tables SET tick_due_at = now() - interval '1 minute' WHERE id = ANY(:ids)"),
                        {"ids": [*due, disabled, marked]})
        session.execute(text("UPDATE tables SET tick_due_at = now() + interval '1 hour' WHERE id = ANY(:ids)"),
                        {"ids": future})
        session.execute(text("UPDATE tables SET enabled = false WHERE id = :id"), {"id": disabled})
        session.execute(text("UPDATE tables SET tick_requested_at = now() WHERE id = :id"), {"id": marked})
    lease, epoch = _leader(db)
    assert request_ticks(lease, epoch) == 3
    with db.transaction() as session:
        now_marked = set(session.scalars(select(RegisteredTable.id)
                                         .where(RegisteredTable.tick_requested_at.is_not(None))))
    assert now_marked == {*due, marked} and not now_marked & {*future, *never, disabled}
    assert request_ticks(lease, epoch) == 0, "marked once until taken"
    with db.transaction() as session:
        assert sorted(TableRepo(session).take_tick_requests(100)) == sorted([*due, marked])
        assert TableRepo(session).take_tick_requests(100) == []


def test_a_scan_request_covers_every_enabled_table_once_across_two_planners(db, monkeypatch):
    ids = _tables(db, 2 * SCAN_CHUNK_TABLES + 37)
    disabled = set(ids[::50])
    with db.transaction() as session:
        session.execute(text("UPDATE tables SET enabled = false WHERE id = ANY(:ids)"), {"ids": sorted(disabled)})
    lease, epoch = _leader(db)
    assert request_scans(lease, epoch) == 3, "a handful of rows, one per chunk of table ids"
    assert request_scans(lease, epoch) == 0, "not asked twice while chunks wait"
    checked: list[str] = []
    monkeypatch.setattr(runner, "unchanged_since", lambda base_path, stamp, context: checked.append(base_path) or True)
    planners = [Planner(db, OPTIONS, watch_timelines=False) for _ in range(2)]
    # Two planners take chunks at the same time: each its own (SKIP LOCKED), until none is left.
    taken: list[tuple[int, int]] = []
    while True:
        with db.transaction() as a, db.transaction() as b:
            chunks = [ScanRequestRepo(a).take(), ScanRequestRepo(b).take()]
        if not any(chunks):
            break
        for planner, chunk in zip(planners, chunks, strict=True):
            if chunk:
                taken.append(chunk)
                assert planner.scan_range(*chunk) == 0
    assert len(taken) == 3 and len(set(taken)) == 3
    enabled = [f"/nowhere/t{i}" for i, table_id in enumerate(ids) if table_id not in disabled]
    assert sorted(checked) == sorted(enabled), "every enabled table exactly once, no disabled one"
    with db.transaction() as session:
        assert ScanRequestRepo(session).waiting() == 0
    assert request_scans(lease, epoch) == 3, "the next scan is asked for once the last one was taken"
