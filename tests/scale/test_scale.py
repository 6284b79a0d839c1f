"""Scale (issue 14, item 4) at 10,000 registered tables, 100,000 tasks and events: the hot queries use
indexes, a list walks by keyset cursor, the scan reads only the timelines that changed, the planner's
cache stays under its bounds and a planner past the kernel's inotify watch limit lists timelines."""
from __future__ import annotations

import errno
import gc
import os
import random
import time
import tracemalloc

import pytest
from fastapi.testclient import TestClient
from scale_support import analyze, make_tables, register
from sqlalchemy import event, select, text, update

from manager.planning_requests import SCAN_CHUNK_TABLES
from planner.process import REQUESTS_PER_TAKE
from planner.runner import Planner
from service.app import create_app
from tms.config import Settings
from tms.db import AlertRepo, EventRepo, NewEvent, QueueRepo, ScanRequestRepo, TableRepo, TaskRepo, TaskState
from tms.db.models import RegisteredTable
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline import watch as timeline_watch
from tms.hudi.timeline.stamp import timeline_stamp
from tms.planning.decisions import PlannerOptions
from worker.claim import ClaimLimits, claim_next

OPTIONS = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=5)
BIG = {"tables", "tasks", "events", "alerts", "task_attempts"}
ADMIN = "scale-admin-token"
TABLES_ADDED_FROM = 1_000_000  # the folder numbers of tables added during a walk: clear of the farm's


def _planner(farm, **kwargs) -> Planner:
    return Planner(farm.db, OPTIONS, **{"watch_timelines": False, **kwargs})


def _seq_scans(plan: dict) -> list[str]:
    found = [plan["Relation Name"]] if plan["Node Type"] == "Seq Scan" and plan.get("Relation Name") in BIG else []
    for child in plan.get("Plans", []):
        found += _seq_scans(child)
    return found


class Statements:
    """The SQL statements a block of code sends (single executions: a bulk insert is not a query)."""

    def __init__(self, db):
        self.db, self.seen = db, []

    def _record(self, conn, cursor, statement, parameters, context, executemany):
        if not executemany and statement.lstrip().split()[0].upper() in ("SELECT", "UPDATE", "DELETE", "INSERT"):
            self.seen.append((statement, parameters))

    def __enter__(self):
        event.listen(self.db.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc):
        event.remove(self.db.engine, "before_cursor_execute", self._record)


def test_the_hot_queries_use_indexes(farm):
    """Every query of the event path, the periodic planning requests (the leader's marking of the due tables
    and its scan request in chunks, the planners' taking them, the trigger with no leader), the scan, the list
    endpoints and the worker's claim, EXPLAINed on 10,000 tables and 100,000 tasks and events: none scans a
    big table whole."""
    ids = farm.ids
    due = ids[::200]  # the steady state: the periodic trigger is due on a few tables, later or never on the others
    with farm.db.transaction() as session:
        QueueRepo(session).put("local", kind="local", master="local[1]", capacity=10_000)
        session.execute(update(RegisteredTable).values(tick_due_at=text("now() + interval '1 hour'")))
        session.execute(update(RegisteredTable).where(RegisteredTable.id.in_(ids[1::3]))
                        .values(tick_due_at=None))
        session.execute(update(RegisteredTable).where(RegisteredTable.id.in_(due))
                        .values(tick_due_at=text("now() - interval '1 minute'")))
    analyze(farm.db)
    planner = _planner(farm)
    waiting = random.Random(1).sample(ids, 20)
    with Statements(farm.db) as statements:
        with farm.db.transaction() as session:  # the intake (its async twin sends the same statement)
            EventRepo(session).add_many([NewEvent(t, "20991231000000000", "deltacommit", "completed", "api")
                                         for t in waiting])
            TableRepo(session).by_base_path(farm.paths[7])
        assert set(planner.tables_with_events()) == set(waiting)
        assert planner.handle_events(waiting[0])
        with farm.db.transaction() as session:  # the leader's requests
            assert TableRepo(session).request_ticks() == len(due), "only the due tables are marked"
            assert ScanRequestRepo(session).request(SCAN_CHUNK_TABLES) == len(ids) // SCAN_CHUNK_TABLES
        with farm.db.transaction() as session:  # a planner takes them
            ticks = TableRepo(session).take_tick_requests(REQUESTS_PER_TAKE)
            chunk = ScanRequestRepo(session).take()
        assert sorted(ticks) == sorted(due) and chunk is not None
        planner.tick_tables(ticks)
        planner.scan_range(*chunk)
        planner.tick()  # with no leader: the due tables' index range
        with farm.db.transaction() as session:
            TableRepo(session).find(limit=51, after_id=ids[5000])
            TableRepo(session).find(database="db7", limit=51, after_id=ids[5000])
            TaskRepo(session).find(limit=51, before_id=50_000)
            TaskRepo(session).find(state=TaskState.FAILED, limit=51)
            TaskRepo(session).find(table_id=ids[123], limit=51)
            AlertRepo(session).find(table_id=ids[40], limit=51)
            AlertRepo(session).find(limit=51, before_id=500)
        assert claim_next(farm.db, "scale-worker", ClaimLimits(lease_seconds=30, driver_memory_mb=512,
                                                               driver_cores=1, max_executors_per_table=4))
    assert len(statements.seen) > 20
    scanned = []
    with farm.db.engine.connect() as conn:
        for statement, parameters in statements.seen:
            [[plan]] = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, parameters).one()
            if found := _seq_scans(plan["Plan"]):
                scanned.append((found, statement))
        conn.rollback()
    assert scanned == [], "sequential scans of big tables:\n" + "\n".join(f"{f}: {s}" for f, s in scanned)
    with farm.db.transaction() as session:  # the scan's other chunks: not this test's business
        while ScanRequestRepo(session).take():
            pass


def _walk(client, path: str, on_page=lambda: None, **params) -> list[int]:
    seen: list[int] = []
    cursor: dict = {}
    while True:
        response = client.get(path, params={**params, **cursor}, headers={"Authorization": f"Bearer {ADMIN}"})
        assert response.status_code == 200, response.text
        page = response.json()
        assert (page["total"] is None) == bool(cursor), "the total is counted on the first page only"
        seen += [item["id"] for item in page["items"]]
        on_page()
        if page["next_cursor"] is None:
            return seen
        cursor = {"cursor": page["next_cursor"]}


def test_a_cursor_walk_lists_every_table_exactly_once_while_tables_are_added(farm, tmp_path):
    settings = Settings(database_url=farm.url, admin_token=ADMIN, storage_roots=[str(farm.root)],
                        heartbeat_seconds=3600)
    added: list[int] = []
    paths, facts = make_tables(tmp_path, 60, start=TABLES_ADDED_FROM)

    def add_three():
        added.extend(register(farm.db, paths[len(added):len(added) + 3], facts))

    with TestClient(create_app(settings, farm.db)) as client:
        headers = {"Authorization": f"Bearer {ADMIN}"}
        seen = _walk(client, "/api/v1/tables", add_three, limit=500)
        assert len(seen) == len(set(seen)), "a table listed twice"
        assert set(farm.ids) <= set(seen), "a table missed"
        assert set(seen) - set(farm.ids) <= set(added)
        # The other lists walk the same way, filters kept; ids descending (newest first).
        failed = _walk(client, "/api/v1/tasks", state="FAILED", limit=7)
        assert failed == sorted(failed, reverse=True) and len(failed) == len(set(failed))
        with farm.db.transaction() as session:
            assert len(failed) == TaskRepo(session).find(state=TaskState.FAILED)[1] > 7
            alerts_total = AlertRepo(session).find()[1]
        alerts = _walk(client, "/api/v1/alerts", limit=100)
        assert len(alerts) == len(set(alerts)) == alerts_total > 100
        # offset paging still works, after a cursor too (it skips rows past the cursor's); a cursor of another
        # list is refused
        by_offset = client.get("/api/v1/tables", params={"limit": 5, "offset": 10}, headers=headers).json()
        assert [t["id"] for t in by_offset["items"]] == farm.ids[10:15] and by_offset["total"] == len(seen)
        cursor = client.get("/api/v1/tables", params={"limit": 5}, headers=headers).json()["next_cursor"]
        after = client.get("/api/v1/tables", params={"limit": 5, "cursor": cursor, "offset": 5}, headers=headers)
        assert [t["id"] for t in after.json()["items"]] == farm.ids[10:15]
        response = client.get("/api/v1/tables", params={"cursor": cursor.upper()}, headers=headers)
        assert response.status_code == 422 and "cursor" in response.json()["detail"]
        assert client.get("/api/v1/tasks", params={"cursor": cursor}, headers=headers).status_code == 422
    with farm.db.transaction() as session:
        for table_id in added:
            TableRepo(session).unregister(table_id)


def _age(path: str, seconds: float) -> None:
    """Move a table's folders' mtimes back (as time passing would), past the stamp's racy window."""
    table = HudiTable.load(path)
    when = time.time() - seconds
    for rel in (".hoodie", table.config.timeline_dir):
        os.utime(table.storage.full(rel), (when, when))


def _change(paths: list[str], seconds_ago: float) -> None:
    for path in paths:
        HudiTable.load(path).timeline.create_requested("deltacommit")  # a writer's new instant
        _age(path, seconds_ago)


def test_the_scan_reads_only_the_timelines_that_changed(farm, monkeypatch):
    listed: list[str] = []
    real_names = LocalStorage.names

    def counting_names(self, rel):
        if rel.startswith(".hoodie"):
            listed.append(self.root)
        return real_names(self, rel)

    monkeypatch.setattr(LocalStorage, "names", counting_names)
    # All but the first 100 tables were read whole before: they carry the stamp the planner leaves.
    unread, read = farm.paths[:100], farm.paths[100:]
    with farm.db.transaction() as session:
        session.execute(update(RegisteredTable).values(timeline_stamp=None))
        session.execute(update(RegisteredTable), [
            {"id": table_id, "timeline_stamp": timeline_stamp(LocalStorage(path), ".hoodie/timeline")}
            for table_id, path in zip(farm.ids[100:], read, strict=True)])
    planner = _planner(farm)
    assert planner.scan() == 100
    assert sorted(set(listed)) == sorted(unread), "only the never-read timelines were listed"

    changed = random.Random(2).sample(read, 25)
    _change(changed, seconds_ago=600)
    listed.clear()
    assert planner.scan() == 25
    assert sorted(set(listed)) == sorted(changed)

    # The leader's scan requests take the same shortcut: every table asked for, the changed ones read.
    again = random.Random(3).sample(read, 5)
    _change(again, seconds_ago=300)
    listed.clear()
    with farm.db.transaction() as session:
        assert ScanRequestRepo(session).request(SCAN_CHUNK_TABLES) == len(farm.ids) // SCAN_CHUNK_TABLES
    reconciled = 0
    while True:
        with farm.db.transaction() as session:
            chunk = ScanRequestRepo(session).take()
        if not chunk:
            break
        reconciled += planner.scan_range(*chunk)
    assert reconciled == 5 and sorted(set(listed)) == sorted(again)


def test_the_timeline_cache_stays_under_its_bounds(farm):
    with farm.db.transaction() as session:
        rows = list(session.scalars(select(RegisteredTable).order_by(RegisteredTable.id).limit(1500)))
    bound = 150 * 2_500 + 10_000  # some 150 empty timelines
    by_count = _planner(farm, cached_tables=500).cache
    by_bytes = _planner(farm, cache_bytes=bound).cache
    for row in rows:
        for cache in (by_count, by_bytes):
            cache.get(row)
            cache.measure(row.id)
    assert len(by_count) == 500
    assert by_bytes.total_bytes <= bound and 50 <= len(by_bytes) <= 160
    # The estimate is the memory really held (tracemalloc), within a factor of two, timelines of 40 instants
    # as of empty ones.
    for path in farm.paths[:60]:
        table = HudiTable.load(path)
        for _ in range(40):
            table.timeline.create_requested("deltacommit")
    for paths in (farm.paths[:60], farm.paths[60:120]):
        gc.collect()
        tracemalloc.start()
        tables = [HudiTable.load(p) for p in paths]
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        estimate = sum(t.timeline.footprint() for t in tables)
        assert held / 2 <= estimate <= held * 2, (held, estimate)


def test_more_timelines_than_inotify_watches_are_listed_without_error(farm, monkeypatch, caplog):
    if timeline_watch.INotify is None or timeline_watch.filesystem_type(str(farm.root)) \
            not in timeline_watch.LOCAL_FILESYSTEMS:
        pytest.skip("no inotify on this filesystem")
    real_add_watch = timeline_watch.INotify.add_watch
    watches: list[int] = []

    def limited_add_watch(self, path, mask):  # as the kernel past fs.inotify.max_user_watches
        if len(watches) >= 50:
            raise OSError(errno.ENOSPC, "No space left on device")
        watches.append(wd := real_add_watch(self, path, mask))
        return wd

    monkeypatch.setattr(timeline_watch.INotify, "add_watch", limited_add_watch)
    planner = _planner(farm, watch_timelines=True)
    with farm.db.transaction() as session:
        rows = [TableRepo(session).get(t) for t in farm.ids[1000:1200]]
    tables = [planner.cache.get(row).table for row in rows]
    assert planner.cache.watcher.watch_limit_reached
    assert len(watches) == 50, "once refused, no more watches are asked for"
    assert [t.timeline.changes is not None for t in tables] == [True] * 50 + [False] * 150
    assert sum("watch limit" in r.message for r in caplog.records) == 1
    # An unwatched timeline is listed: a writer's new instant is seen on the next reload.
    unwatched = tables[-1]
    written = HudiTable.load(unwatched.base_path).timeline.create_requested("deltacommit")
    assert written.timestamp in [i.timestamp for i in unwatched.timeline.reload()]
    planner.cache.forget(rows[0].id)  # a watch freed: new timelines are watched again
    assert not planner.cache.watcher.watch_limit_reached
    planner.close()
