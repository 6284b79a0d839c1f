"""The tables a planner process has loaded, kept between passes: a timeline loaded once is afterwards
reloaded incrementally (only new instant files are parsed) and keeps its cache of completed instants.
With a watcher, each cached timeline on a local filesystem is fed its folder's changes by the kernel, so
a reload does not list the folder (timeline_watch).

The cache is bounded by a number of tables and by the memory their timelines hold (estimated after each
pass, `Timeline.footprint`): beyond either, the least recently used tables are dropped (and unwatched),
and are loaded again when next planned.

A table's object is only used under the table's planning lock, so threads never share one at a time;
the cache itself is guarded for the threads that look up different tables at once."""
from __future__ import annotations

import threading
from collections import OrderedDict

from tms.db import RegisteredTable
from tms.hudi.table import HudiTable
from tms.hudi.timeline_watch import TimelineWatcher


class TableCache:
    def __init__(self, capacity: int, watcher: TimelineWatcher | None = None, *, max_bytes: int | None = None):
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.watcher = watcher
        self._tables: OrderedDict[int, HudiTable] = OrderedDict()
        self._bytes: dict[int, int] = {}  # each cached table's footprint when last measured
        self.total_bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._tables)

    def get(self, row: RegisteredTable) -> HudiTable:
        """The loaded table of a registered one (loaded now if absent, or if its base path changed)."""
        with self._lock:
            table = self._tables.get(row.id)
            if table is not None and table.base_path == row.base_path.rstrip("/"):
                self._tables.move_to_end(row.id)
                return table
        # Outside the lock: loading reads the whole timeline.
        table = HudiTable.load(row.base_path, watcher=self.watcher)
        with self._lock:
            self._remove(row.id)
            self._tables[row.id] = table
            self._sized(row.id, table)
        return table

    def measure(self, table_id: int) -> None:
        """Account for what a pass added to the table's timeline (new instants, cached files)."""
        with self._lock:
            table = self._tables.get(table_id)
            if table is not None:
                self._sized(table_id, table)

    def forget(self, table_id: int) -> None:
        """Drop a table whose files could not be read: the next pass loads it afresh."""
        with self._lock:
            self._remove(table_id)

    def _sized(self, table_id: int, table: HudiTable) -> None:
        """Record the table's footprint, then evict the least recently used others while over a bound."""
        size = table.timeline.footprint()
        self.total_bytes += size - self._bytes.get(table_id, 0)
        self._bytes[table_id] = size
        while len(self._tables) > 1 and (len(self._tables) > self.capacity or (
                self.max_bytes is not None and self.total_bytes > self.max_bytes)):
            oldest = next(iter(self._tables))
            if oldest == table_id:  # the one in use stays: move past it
                self._tables.move_to_end(table_id)
                continue
            self._remove(oldest)

    def _remove(self, table_id: int) -> None:
        table = self._tables.pop(table_id, None)
        self.total_bytes -= self._bytes.pop(table_id, 0)
        if table is not None and self.watcher is not None:
            self.watcher.forget(table.timeline.changes)
