"""Event intake: resolve each event's table, check the sender may report on it, and store the
events in one autocommit statement, so an acknowledged event is durable before the 202 is sent.

Table identities (id, base path, type, callback key hash) are cached for a few seconds: the
common case, a callback for a known table, then costs a single INSERT."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, status
from sqlalchemy.exc import IntegrityError

from tms.db import Database, EventRepo, NewEvent, TableRepo

from .auth import WriterCredential, unauthorized
from .metrics import Metrics
from .schemas.events import IngestResult

DEFAULT_ACTION = {"COPY_ON_WRITE": "commit", "MERGE_ON_READ": "deltacommit"}
_NAMED_IN_ERRORS = 5
_RESULTS = {401: "unauthorized", 404: "unknown_table"}


@dataclass(frozen=True)
class TableIdentity:
    id: int
    base_path: str
    table_type: str
    callback_key_hash: str | None


@dataclass(frozen=True)
class IncomingEvent:
    """An event before its table is resolved. `action` None: infer from the table type."""

    table_id: int | None
    base_path: str | None  # normalized
    instant: str
    action: str | None
    state: str
    completion_time: str | None = None
    write_stats: list[dict[str, Any]] | None = None
    extra_metadata: dict[str, Any] | None = None

    @property
    def table_key(self) -> int | str:
        return self.table_id if self.table_id is not None else self.base_path


class TableCache:
    def __init__(self, ttl_seconds: float):
        self.ttl = ttl_seconds
        self._by_key: dict[int | str, tuple[TableIdentity, float]] = {}

    def get(self, key: int | str) -> TableIdentity | None:
        hit = self._by_key.get(key)
        return hit[0] if hit and hit[1] > time.monotonic() else None

    def put(self, table: TableIdentity) -> None:
        until = time.monotonic() + self.ttl
        self._by_key[table.id] = self._by_key[table.base_path] = (table, until)

    def clear(self) -> None:
        self._by_key.clear()


class Intake:
    def __init__(self, database: Database, metrics: Metrics, *, cache_seconds: float):
        self.database = database
        self.metrics = metrics
        self.tables = TableCache(cache_seconds)

    def store(self, events: list[IncomingEvent], credential: WriterCredential, *, kind: str) -> IngestResult:
        """Store the events (all or none): 401 if the sender may not report on a table, 404 for
        unknown tables (named), 202 otherwise, duplicates included."""
        try:
            tables = self._resolve([e.table_key for e in events])
            self._check(events, tables, credential)
            stored = self._insert([self._row(e, tables[e.table_key], kind) for e in events])
        except HTTPException as exc:
            self.metrics.count_events(kind, _RESULTS.get(exc.status_code, "rejected"), len(events))
            raise
        except Exception:
            self.metrics.count_events(kind, "error", len(events))
            raise
        self.metrics.count_events(kind, "stored", stored)
        self.metrics.count_events(kind, "duplicate", len(events) - stored)
        return IngestResult(received=len(events), stored=stored, duplicates=len(events) - stored)

    def _resolve(self, keys: list[int | str]) -> dict[int | str, TableIdentity]:
        wanted = set(keys)
        found = {k: t for k in wanted if (t := self.tables.get(k)) is not None}
        missing = wanted - found.keys()
        if missing:
            with self.database.transaction() as session:
                rows = TableRepo(session).resolve(ids=[k for k in missing if isinstance(k, int)],
                                                  base_paths=[k for k in missing if isinstance(k, str)])
            for row in rows:
                identity = TableIdentity(row.id, row.base_path, row.table_type, row.callback_key_hash)
                self.tables.put(identity)
                found[row.id] = found[row.base_path] = identity
        return found

    @staticmethod
    def _check(events: list[IncomingEvent], tables: dict[int | str, TableIdentity],
               credential: WriterCredential) -> None:
        unknown = sorted({str(e.table_key) for e in events if e.table_key not in tables})
        if unknown:
            if not credential.trusted:  # do not tell an unverified sender which tables exist
                raise unauthorized("HUDI-CALLBACK-KEY does not match")
            raise HTTPException(status.HTTP_404_NOT_FOUND,
                                f"no registered table {', '.join(unknown[:_NAMED_IN_ERRORS])}"
                                + (f" (and {len(unknown) - _NAMED_IN_ERRORS} more)"
                                   if len(unknown) > _NAMED_IN_ERRORS else "") + "; nothing was stored")
        for event in events:
            table = tables[event.table_key]
            if not credential.admits(table.callback_key_hash):
                raise unauthorized(f"HUDI-CALLBACK-KEY does not match for table {table.id}")

    @staticmethod
    def _row(event: IncomingEvent, table: TableIdentity, kind: str) -> NewEvent:
        return NewEvent(table_id=table.id, instant=event.instant,
                        action=event.action or DEFAULT_ACTION[table.table_type], state=event.state,
                        source=kind, completion_time=event.completion_time, write_stats=event.write_stats,
                        extra_metadata=event.extra_metadata)

    def _insert(self, rows: list[NewEvent]) -> int:
        try:
            with self.database.autocommit() as connection:
                return EventRepo(connection).add_many(rows)
        except IntegrityError:
            # A cached table was unregistered meanwhile: forget the cache and report it properly.
            self.tables.clear()
            raise HTTPException(status.HTTP_404_NOT_FOUND,
                                "a table of these events was unregistered; nothing was stored") from None


