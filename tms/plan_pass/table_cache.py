"""The tables a planner process has loaded, kept between passes: a timeline loaded once is afterwards
reloaded incrementally (only new instant files are parsed) and keeps its cache of completed instants; a
pass that plans loads it again if its `hoodie.properties` changed.
With a watcher, each cached timeline on a local filesystem is fed its folder's changes by the kernel, so
a reload does not list the folder (timeline_watch).

Each cached table keeps its TransactionManager (the writers' lock, from the table's concurrency options), open
while the table is cached and closed when the cache drops it (a ZooKeeper session is not reopened per pass).

A table's object is only used under the table's planning lock, so threads never share one at a time;
the cache itself is guarded for the threads that look up different tables at once."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from tms.db import RegisteredTable
from tms.hudi.locks import TransactionManager
from tms.hudi.storage import Storage, open_storage
from tms.hudi.table import PROPERTIES, HudiTable
from tms.hudi.timeline_watch import TimelineWatcher


@dataclass(frozen=True)
class CachedTable:
    table: HudiTable
    transactions: TransactionManager  # plans and rollbacks are written under it
    concurrency_options: dict[str, str]  # what `transactions` was opened with
    properties: bytes | None  # the table's hoodie.properties as it was loaded

    def matches(self, row: RegisteredTable) -> bool:
        return (self.table.base_path == row.base_path.rstrip("/")
                and self.concurrency_options == dict(row.concurrency_options))


class TableCache:
    def __init__(self, capacity: int, watcher: TimelineWatcher | None = None):
        self.capacity = capacity
        self.watcher = watcher
        self._tables: OrderedDict[int, CachedTable] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, row: RegisteredTable) -> CachedTable:
        """The loaded table of a registered one and its transaction manager (loaded now if absent, or if its
        base path or concurrency options changed)."""
        with self._lock:
            cached = self._tables.get(row.id)
            if cached is not None and cached.matches(row):
                self._tables.move_to_end(row.id)
                return cached
        return self._load(row)

    def with_current_properties(self, row: RegisteredTable) -> CachedTable:
        """`get(row)`, loaded again if a writer changed the table's `hoodie.properties` since it was loaded
        (enabled a metadata-table partition, changed the merge mode...): what TMS can run on it is decided from
        them. Called by passes that plan (it reads one small file), not by those that decide nothing is due."""
        cached = self.get(row)
        current = _read_properties(cached.table.storage)
        return self._load(row) if current is not None and current != cached.properties else cached

    def _load(self, row: RegisteredTable) -> CachedTable:
        # Outside the lock: loading reads the whole timeline. The properties are read first: a change
        # in between makes them differ from what is loaded, and the next pass loads the table again.
        properties = _read_properties(open_storage(row.base_path))
        table = HudiTable.load(row.base_path, watcher=self.watcher)
        try:
            options = dict(row.concurrency_options)
            cached = CachedTable(table, TransactionManager.from_options(table, options), options, properties)
        except BaseException:
            self._forget_timeline(table)
            raise
        with self._lock:
            dropped = [self._tables.pop(row.id, None)]
            self._tables[row.id] = cached
            while len(self._tables) > self.capacity:
                dropped.append(self._tables.popitem(last=False)[1])
        self._drop(dropped)
        return cached

    def forget(self, table_id: int) -> None:
        """Drop a table whose files could not be read: the next pass loads it afresh."""
        with self._lock:
            dropped = [self._tables.pop(table_id, None)]
        self._drop(dropped)

    def close(self) -> None:
        """Drop every table (the planner stops): their locks' connections are closed."""
        with self._lock:
            dropped: list[CachedTable | None] = list(self._tables.values())
            self._tables.clear()
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
