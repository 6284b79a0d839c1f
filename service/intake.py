"""Event intake: resolve each event's table, check the sender may report on it, and store the
request's events (tms.db.intake), durably before the 202.

Runs on the event loop (no worker thread per request). Table identities (id, base path, type,
callback key hash) are cached for `cache_seconds`: a callback for a known table then costs only
its share of an INSERT."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg
from fastapi import HTTPException, status
from starlette.concurrency import run_in_threadpool

from tms.db import NewEvent
from tms.db.intake import IntakeStore, TableIdentity
from tms.hudi.storage.paths import spellings
from tms.hudi.timeline.instant import Action

from .auth import WriterCredential, unauthorized
from .metrics import Metrics
from .schemas.events import IngestResult

DEFAULT_ACTION = {"COPY_ON_WRITE": Action.COMMIT, "MERGE_ON_READ": Action.DELTA_COMMIT}
_NAMED_IN_ERRORS = 5
_RESULTS = {401: "unauthorized", 404: "unknown_table"}
# One answer for a wrong key and for a table that is not registered: an unverified sender learns nothing.
KEY_MISMATCH = "HUDI-CALLBACK-KEY does not match"


class ReportedEvent(Protocol):
    """An event before its table is resolved (an EventIn, or a callback's IncomingEvent), naming its
    table by `table_id` or by `base_path` (normalized). `action` None: infer from the table type."""

    @property
    def table_id(self) -> int | None: ...
    @property
    def base_path(self) -> str | None: ...
    @property
    def instant(self) -> str: ...
    @property
    def action(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def completion_time(self) -> str | None: ...
    @property
    def write_stats(self) -> list[dict[str, Any]] | None: ...
    @property
    def extra_metadata(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class IncomingEvent:
    """A ReportedEvent made from another body (Hudi's callback)."""

    table_id: int | None
    base_path: str | None
    instant: str
    action: str | None
    state: str
    completion_time: str | None = None
    write_stats: list[dict[str, Any]] | None = None
    extra_metadata: dict[str, Any] | None = None


def table_key(event: ReportedEvent) -> int | str:
    if event.table_id is not None:
        return event.table_id
    if event.base_path is None:  # the schemas require one of them
        raise ValueError("an event names its table by table_id or base_path")
    return event.base_path


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
    def __init__(self, store: IntakeStore, metrics: Metrics, *, cache_seconds: float,
                 admit: Callable[[str], bool] | None = None):
        """`admit(base_path)`: onboard an unregistered table a trusted sender reports on (True: registered);
        None: such events are refused."""
        self.store = store
        self.metrics = metrics
        self.tables = TableCache(cache_seconds)
        self.known_keys: dict[str, float] = {}  # hash of a table's callback key -> known to be in use until
        self.admit = admit

    def forget_tables(self) -> None:
        """After a change to tables (registered, changed, unregistered) commits: their identities and keys are
        read from the database again."""
        self.tables.clear()

    async def check_key(self, credential: WriterCredential) -> None:
        """401 for a sender whose key is no registered table's: refused before its body is read, whatever it
        holds. A key in use is remembered for `cache_seconds`."""
        if credential.trusted:
            return
        assert credential.key_hash is not None  # an untrusted sender sent a key
        if self.known_keys.get(credential.key_hash, 0.0) > time.monotonic():
            return
        if not await self.store.key_in_use(credential.key_hash):
            raise unauthorized(KEY_MISMATCH)
        self.known_keys[credential.key_hash] = time.monotonic() + self.tables.ttl

    async def accept(self, events: Sequence[ReportedEvent], credential: WriterCredential, *,
                     kind: str) -> IngestResult:
        """Store the events (all or none): 401 if the sender may not report on a table, 404 for
        unknown tables (named), 202 otherwise, duplicates included."""
        try:
            keys = [table_key(e) for e in events]
            tables = await self._resolve(set(keys))
            if self.admit is not None and credential.trusted:
                tables = await self._admit(set(keys), tables)
            self._check(keys, tables, credential)
            stored = await self._insert([self._row(e, tables[key], kind) for e, key in zip(events, keys, strict=True)])
        except HTTPException as exc:
            self.metrics.count_events(kind, _RESULTS.get(exc.status_code, "rejected"), len(events))
            raise
        except Exception:
            self.metrics.count_events(kind, "error", len(events))
            raise
        self.metrics.count_events(kind, "stored", stored)
        self.metrics.count_events(kind, "duplicate", len(events) - stored)
        return IngestResult(received=len(events), stored=stored, duplicates=len(events) - stored)

    async def _resolve(self, keys: set[int | str]) -> dict[int | str, TableIdentity]:
        found = {k: t for k in keys if (t := self.tables.get(k)) is not None}
        missing = keys - found.keys()
        if missing:
            # An S3 table is found by any spelling of its location (s3, s3a, s3n); by its own spelling first.
            paths = [k for k in missing if isinstance(k, str)]
            rows = await self.store.resolve_tables([k for k in missing if isinstance(k, int)],
                                                   sorted({alt for k in paths for alt in spellings(k)}))
            by_path: dict[str, TableIdentity] = {}
            for table in rows:
                self.tables.put(table)
                found[table.id] = by_path[table.base_path] = table
            for key in paths:
                match = next((by_path[p] for p in spellings(key) if p in by_path), None)
                if match is not None:
                    found[key] = match
        return found

    async def _admit(self, keys: set[int | str], tables: dict[int | str, TableIdentity]
                     ) -> dict[int | str, TableIdentity]:
        """Onboard the unregistered base paths the events name (discovery's rule), then resolve them again."""
        assert self.admit is not None
        admit = self.admit
        unknown = [k for k in keys if isinstance(k, str) and k not in tables]
        admitted = [k for k in unknown if await run_in_threadpool(admit, k)]
        return {**tables, **(await self._resolve(set(admitted)))} if admitted else tables

    @staticmethod
    def _check(keys: list[int | str], tables: dict[int | str, TableIdentity],
               credential: WriterCredential) -> None:
        """`keys`: each event's table_key."""
        unknown = sorted({str(key) for key in keys if key not in tables})
        if unknown:
            if not credential.trusted:  # do not tell an unverified sender which tables exist
                raise unauthorized(KEY_MISMATCH)
            named = ", ".join(unknown[:_NAMED_IN_ERRORS])
            more = f" (and {len(unknown) - _NAMED_IN_ERRORS} more)" if len(unknown) > _NAMED_IN_ERRORS else ""
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no registered table {named}{more}; nothing was stored")
        if not credential.trusted and not all(credential.admits(tables[key].callback_key_hash)
                                              for key in set(keys)):
            raise unauthorized(KEY_MISMATCH)

    @staticmethod
    def _row(event: ReportedEvent, table: TableIdentity, kind: str) -> NewEvent:
        # str(state): a plain string serializes several times faster than an EventState.
        return NewEvent(table.id, event.instant, event.action or DEFAULT_ACTION[table.table_type], str(event.state),
                        kind, event.completion_time, event.write_stats, event.extra_metadata)

    async def _insert(self, rows: list[NewEvent]) -> int:
        try:
            return await self.store.add_events(rows)
        except psycopg.errors.ForeignKeyViolation:
            # A cached table was unregistered meanwhile: forget the cache and report it properly.
            self.tables.clear()
            raise HTTPException(status.HTTP_404_NOT_FOUND,
                                "a table of these events was unregistered; nothing was stored") from None
