"""Events are stored once per (table, instant, action, state), however often and however
concurrently they arrive."""
from __future__ import annotations

import threading

from tms.db import EventRepo, NewEvent


def _event(table_id, instant="20250101000000001", state="completed", **kw):
    return NewEvent(table_id=table_id, instant=instant, action="deltacommit", state=state, source="api", **kw)


def test_duplicates_are_ignored(db, table_id):
    stats = [{"fileId": "f1", "path": "p/.f1.log.1", "totalWriteBytes": 10, "note": "é\u2603"}]
    with db.autocommit() as conn:
        repo = EventRepo(conn)
        assert repo.add_many([_event(table_id, write_stats=stats, extra_metadata={"k": "v"})]) == 1
        assert repo.add_many([_event(table_id)]) == 0
        # Within one batch too; a new state of the same instant is a new event.
        assert repo.add_many([_event(table_id, state="requested"), _event(table_id, state="requested"),
                              _event(table_id, state="inflight")]) == 2
    with db.transaction() as session:
        events = EventRepo(session).unprocessed(table_id)
    assert [(e.state, e.source) for e in events] == [("completed", "api"), ("requested", "api"), ("inflight", "api")]
    assert events[0].write_stats == stats and events[0].extra_metadata == {"k": "v"}


def test_concurrent_inserts_of_the_same_events_store_each_once(db, table_id):
    events = [_event(table_id, instant=f"202501010000{i:05d}") for i in range(50)]
    barrier = threading.Barrier(8)
    stored: list[int] = []

    def post(order):
        barrier.wait()
        for event in order:
            with db.autocommit() as conn:
                stored.append(EventRepo(conn).add_many([event]))

    threads = [threading.Thread(target=post, args=(events if i % 2 else events[::-1],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(stored) == 50
    with db.transaction() as session:
        assert EventRepo(session).count(table_id) == 50


def test_planner_queue(db, table_id):
    with db.autocommit() as conn:
        EventRepo(conn).add_many([_event(table_id, instant=f"2025010100000000{i}") for i in range(3)])
    with db.transaction() as session:
        repo = EventRepo(session)
        assert repo.tables_with_unprocessed() == [table_id]
        first = repo.unprocessed(table_id, limit=2)
        repo.mark_processed(e.id for e in first)
    with db.transaction() as session:
        repo = EventRepo(session)
        assert [e.instant for e in repo.unprocessed(table_id)] == ["20250101000000002"]
