"""The async intake store: concurrent requests written together, each answered with its own count,
a faulty request failing alone."""
from __future__ import annotations

import asyncio

import psycopg
import pytest

from tms.db import EventRepo, NewEvent
from tms.db.intake import IntakeStore


def _event(table_id, i):
    return NewEvent(table_id=table_id, instant=f"202501010000{i:05d}", action="deltacommit", state="completed",
                    source="api")


def test_concurrent_requests_share_inserts_and_count_each_event_once(db, table_id):
    requests = [[_event(table_id, i), _event(table_id, i + 1)] for i in range(0, 60)]  # overlapping pairs

    async def run():
        store = IntakeStore(db.url, max_connections=2)
        await store.open()
        try:
            counts = await asyncio.gather(*(store.add_events(r) for r in requests))
            again = await store.add_events(requests[0])
            tables = await store.resolve_tables([table_id], ["/nowhere"])
        finally:
            await store.close()
        return counts, again, tables

    counts, again, tables = asyncio.run(run())
    assert sum(counts) == 61 and again == 0
    assert [t.id for t in tables] == [table_id]
    with db.transaction() as session:
        assert EventRepo(session).count(table_id) == 61


def test_a_faulty_request_fails_alone(db, table_id):
    good = [[_event(table_id, i)] for i in range(20)]
    bad = [_event(table_id + 1000, 99)]  # no such table: foreign key violation

    async def run():
        store = IntakeStore(db.url, max_connections=1)
        await store.open()
        try:
            return await asyncio.gather(*(store.add_events(r) for r in [*good[:10], bad, *good[10:]]),
                                        return_exceptions=True)
        finally:
            await store.close()

    results = asyncio.run(run())
    assert isinstance(results[10], psycopg.errors.ForeignKeyViolation)
    assert results[:10] + results[11:] == [1] * 20


def test_a_broken_connection_is_replaced(db, table_id):
    async def run():
        store = IntakeStore(db.url, max_connections=1)
        await store.open()
        try:
            await store.add_events([_event(table_id, 1)])
            async with store.pool.connection() as connection:  # the server ends the session
                with pytest.raises(psycopg.OperationalError):
                    await connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
            return await store.add_events([_event(table_id, 2)])
        finally:
            await store.close()

    assert asyncio.run(run()) == 1
