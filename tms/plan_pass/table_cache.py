"""The tables a planner process has loaded, kept between passes: a timeline loaded once is afterwards
reloaded incrementally (only new instant files are parsed) and keeps its cache of completed instants; a
pass that plans loads it again if its `hoodie.properties` changed.
With a watcher, each cached timeline on a local filesystem is fed its folder's changes by the kernel, so
a reload does not list the folder (timeline_watch).

The cache is bounded by a number of tables and by the memory their timelines hold (estimated after each
pass, `Timeline.footprint`): beyond either, the least recently used tables are dropped (and unwatched),
and are loaded again when next planned.

Each cached table keeps its TransactionManager (the writers' lock, from the table's concurrency options), open
while the table is cached and closed when the cache drops it (a ZooKeeper session is not reopened per pass).

A table's object is only used under the table's planning lock, so threads never share one at a time;
the cache itself is guarded for the threads that look up different tables at once."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from tms.db import TableRecord
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.locks import TransactionManager
from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import PROPERTIES, HudiTable
from tms.hudi.timeline.tail_listing import TailListing
from tms.hudi.timeline.watch import TimelineWatcher


@dataclass(frozen=True)
class CachedTable:
    table: HudiTable
    transactions: TransactionManager  # plans and rollbacks are written under it
    concurrency_options: dict[str, str]  # what `transactions` was opened with
    properties: bytes | None  # the table's hoodie.properties as it was loaded

    def matches(self, row: TableRecord) -> bool:
        return (self.table.base_path == row.base_path.rstrip("/")
                and self.concurrency_options == dict(row.concurrency_options))


class TableCache:
    def __init__(self, capacity: int, watcher: TimelineWatcher | None = None, *, max_bytes: int | None = None,
                 tail_listing: TailListing | None = TailListing(), context: HudiContext = DEFAULT_CONTEXT):
        self.capacity = capacity
        self.context = context
        self.max_bytes = max_bytes
        self.watcher = watcher
        # The cached timelines stay loaded: where no change feed tells their changes, each reload lists only
        # the timeline folder's tail (see tail_listing), None: the whole folder.
        self.tail_listing = tail_listing
        self._tables: OrderedDict[int, CachedTable] = OrderedDict()
        self._bytes: dict[int, int] = {}  # each cached table's footprint when last measured
        self.total_bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._tables)

    def get(self, row: TableRecord) -> CachedTable:
        """The loaded table of a registered one and its transaction manager (loaded now if absent, or if its
        base path or concurrency options changed)."""
        with self._lock:
            cached = self._tables.get(row.id)
            if cached is not None and cached.matches(row):
                self._tables.move_to_end(row.id)
                return cached
        return self._load(row)

    def with_current_properties(self, row: TableRecord) -> CachedTable:
        """`get(row)`, loaded again if a writer changed the table's `hoodie.properties` since it was loaded
        (enabled a metadata-table partition, changed the merge mode...): what TMS can run on it is decided from
        them. Called by passes that plan (it reads one small file), not by those that decide nothing is due."""
        cached = self.get(row)
        current = _read_properties(cached.table.storage)
        return self._load(row) if current is not None and current != cached.properties else cached

    def _load(self, row: TableRecord) -> CachedTable:
        # Outside the lock: loading reads the whole timeline. The properties are read first: a change
        # in between makes them differ from what is loaded, and the next pass loads the table again.
        properties = _read_properties(self.context.open_storage(row.base_path))
        table = HudiTable.load(row.base_path, watcher=self.watcher, context=self.context)
        table.timeline.tail_listing = self.tail_listing
        try:
            options = dict(row.concurrency_options)
            cached = CachedTable(table, TransactionManager.from_options(table, options), options, properties)
        except BaseException:
            self._forget_timeline(table)
            raise
        with self._lock:
            dropped = [self._remove(row.id)]
            self._tables[row.id] = cached
            dropped += self._sized(row.id, table)
        self._drop(dropped)
        return cached

    def measure(self, table_id: int) -> None:
        """Account for what a pass added to the table's timeline (new instants, cached files)."""
        with self._lock:
            cached = self._tables.get(table_id)
            dropped = self._sized(table_id, cached.table) if cached is not None else []
        self._drop(dropped)

    def forget(self, table_id: int) -> None:
        """Drop a table whose files could not be read: the next pass loads it afresh."""
        with self._lock:
            dropped = [self._remove(table_id)]
        self._drop(dropped)

    def _sized(self, table_id: int, table: HudiTable) -> list[CachedTable | None]:
        """Record the table's footprint, then take out the least recently used others while over a bound
        (under the lock); those taken out."""
        size = table.timeline.footprint()
        self.total_bytes += size - self._bytes.get(table_id, 0)
        self._bytes[table_id] = size
        dropped: list[CachedTable | None] = []
        while len(self._tables) > 1 and (len(self._tables) > self.capacity or (
                self.max_bytes is not None and self.total_bytes > self.max_bytes)):
            oldest = next(iter(self._tables))
            if oldest == table_id:  # the one in use stays: move past it
                self._tables.move_to_end(table_id)
                continue
            dropped.append(self._remove(oldest))
        return dropped

    def _remove(self, table_id: int) -> CachedTable | None:
        self.total_bytes -= self._bytes.pop(table_id, 0)
        return self._tables.pop(table_id, None)

    def close(self) -> None:
        """Drop every table (the planner stops): their locks' connections are closed."""
        with self._lock:
            dropped: list[CachedTable | None] = list(self._tables.values())
            self._tables.clear()
            self._bytes.clear()
            self.total_bytes = 0
        self._drop(dropped)

    def _drop(self, dropped: list[CachedTable | None]) -> None:
        """Outside the cache's lock: closing a transaction manager waits for a pass still using it."""
        for cached in dropped:
            if cached is not None:
                self._forget_timeline(cached.table)
                cached.transactions.close()

    def _forget_timeline(self, table: HudiTable) -> None:
        if self.watcher is not None:
            self.watcher.forget(table.timeline.changes)


def _read_properties(storage: Storage) -> bytes | None:
    """The bytes of `hoodie.properties` (compared, not parsed: a pass reads them); None while a writer
    rewrites it (Hudi keeps a backup meanwhile)."""
    try:
        return storage.read_bytes(PROPERTIES)
    except FileNotFoundError:
        return None
