"""The event intake's database access, asynchronous: the service receives events on its event loop
and stores them on autocommit connections, so an acknowledged event is durable when the call
returns, and no worker thread is involved.

Group commit: requests that arrive while both writers are busy are written together, one INSERT and
one commit for all of them, each request answered once that commit is done. If the database refuses
the group, each of its requests is written again on its own, so a faulty event fails only its request.
Under load this turns many small transactions into a few larger ones; alone, a request is written at
once."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import psycopg
from psycopg import AsyncConnection
from psycopg.pq import TransactionStatus

from .engine import libpq_url
from .repos.events import COUNT_INSERTED_EVENTS_SQL, INSERT_EVENTS_SQL, NewEvent, insert_params

_RESOLVE_SQL = """
SELECT id, base_path, table_type, callback_key_hash FROM tables
WHERE id = ANY(%(ids)s::bigint[]) OR base_path = ANY(%(base_paths)s::text[])
"""

_KEY_IN_USE_SQL = "SELECT EXISTS (SELECT 1 FROM tables WHERE callback_key_hash = %(key_hash)s)"


@dataclass(frozen=True)
class TableIdentity:
    """What the intake needs to know of a registered table."""

    id: int
    base_path: str
    table_type: str
    callback_key_hash: str | None


class _ConnectionPool:
    """Up to `size` autocommit connections, opened on demand and handed out in turn. (A general
    pool's per-checkout bookkeeping would cost more than the intake's INSERT itself.)"""

    def __init__(self, conninfo: str, size: int):
        self.conninfo = conninfo
        self.size = size
        self.opened = 0
        self.idle: asyncio.Queue[AsyncConnection] = asyncio.Queue()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        if self.idle.empty() and self.opened < self.size:
            self.opened += 1
            try:
                conn = await AsyncConnection.connect(self.conninfo, autocommit=True, prepare_threshold=0)
            except BaseException:
                self.opened -= 1
                raise
        else:
            conn = await self.idle.get()
        try:
            yield conn
        finally:
            # A connection that broke, or was left mid-statement by a cancelled request, is dropped.
            if conn.broken or conn.closed or conn.info.transaction_status != TransactionStatus.IDLE:
                self.opened -= 1
                await conn.close()
            else:
                self.idle.put_nowait(conn)

    async def close(self) -> None:
        while not self.idle.empty():
            await self.idle.get_nowait().close()
            self.opened -= 1


_Request = tuple[Sequence[NewEvent], asyncio.Future]
_WRITERS = 2


class IntakeStore:
    """Use between `open()` and `close()`, on the event loop that opened it."""

    def __init__(self, url: str, *, max_connections: int):
        self.conninfo = libpq_url(url)
        self.max_connections = max_connections
        # Two groups in flight: one committing while the next is written. More writers make smaller
        # groups, and each commit waits for its own WAL flush anyway.
        self.writers = min(_WRITERS, max_connections)
        self._waiting: list[_Request] = []
        self._writers: set[asyncio.Task] = set()

    async def open(self) -> None:
        # Created here, not in __init__: connections and queues belong to the running event loop.
        self.pool = _ConnectionPool(self.conninfo, self.max_connections)

    async def close(self) -> None:
        await self.pool.close()

    async def resolve_tables(self, ids: Sequence[int], base_paths: Sequence[str]) -> list[TableIdentity]:
        async with self.pool.connection() as connection:
            cursor = await connection.execute(_RESOLVE_SQL, {"ids": list(ids), "base_paths": list(base_paths)})
            return [TableIdentity(*row) for row in await cursor.fetchall()]

    async def key_in_use(self, key_hash: str) -> bool:
        """Whether some registered table has the callback key of this hash."""
        async with self.pool.connection() as connection:
            cursor = await connection.execute(_KEY_IN_USE_SQL, {"key_hash": key_hash})
            row = await cursor.fetchone()
            return bool(row and row[0])

    async def add_events(self, events: Sequence[NewEvent]) -> int:
        """Store the events not stored yet; how many were new. Returns once they are committed."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((events, future))
        if len(self._writers) < self.writers:  # else a running writer takes them with its next group
            writer = asyncio.create_task(self._write_waiting())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        return await future

    async def _write_waiting(self) -> None:
        while self._waiting:
            group, self._waiting = self._waiting, []
            await self._write(group)

    async def _write(self, group: list[_Request]) -> None:
        try:
            async with self.pool.connection() as connection:
                # One request needs only its count; a group, the keys stored, to tell its requests apart.
                sql = COUNT_INSERTED_EVENTS_SQL if len(group) == 1 else INSERT_EVENTS_SQL
                cursor = await connection.execute(sql, insert_params([e for events, _ in group for e in events]))
                rows = await cursor.fetchall()
        except psycopg.Error as exc:
            if len(group) > 1:  # one request's events may be at fault: write each on its own
                for request in group:
                    await self._write([request])
                return
            _fail(group, exc)
            return
        except BaseException as exc:  # cancelled: nobody waiting may hang
            _fail(group, exc)
            raise
        if len(group) == 1:
            _, future = group[0]
            if not future.done():
                future.set_result(rows[0][0])
            return
        stored = set(rows)
        for events, future in group:
            new = 0
            for event in events:  # an event sent twice in one group counts for its first request
                if event.key in stored:
                    stored.discard(event.key)
                    new += 1
            if not future.done():
                future.set_result(new)


def _fail(group: list[_Request], exc: BaseException) -> None:
    for _, future in group:
        if not future.done():
            future.set_exception(exc)
