"""The tables a planner process has loaded, kept between passes: a timeline loaded once is afterwards
reloaded incrementally (only new instant files are parsed) and keeps its cache of completed instants; a
pass that plans loads it again if its `hoodie.properties` changed.
With a watcher, each cached timeline on a local filesystem is fed its folder's changes by the kernel, so
a reload does not list the folder (timeline_watch).

A table's object is only used under the table's planning lock, so threads never share one at a time;
the cache itself is guarded for the threads that look up different tables at once."""
from __future__ import annotations

import threading
from collections import OrderedDict

from tms.db import RegisteredTable
from tms.hudi.storage import Storage, open_storage
from tms.hudi.table import PROPERTIES, HudiTable
from tms.hudi.timeline_watch import TimelineWatcher


class TableCache:
    def __init__(self, capacity: int, watcher: TimelineWatcher | None = None):
        self.capacity = capacity
        self.watcher = watcher
        self._tables: OrderedDict[int, HudiTable] = OrderedDict()
        self._properties: dict[int, bytes | None] = {}  # each table's hoodie.properties as it was loaded
        self._lock = threading.Lock()

    def get(self, row: RegisteredTable) -> HudiTable:
        """The loaded table of a registered one (loaded now if absent, or if its base path changed)."""
        with self._lock:
            table = self._tables.get(row.id)
            if table is not None and table.base_path == row.base_path.rstrip("/"):
                self._tables.move_to_end(row.id)
                return table
        return self._load(row)

    def with_current_properties(self, row: RegisteredTable, table: HudiTable) -> HudiTable:
        """`table`, or the table loaded again if a writer changed its `hoodie.properties` since it was loaded
        (enabled a metadata-table partition, changed the merge mode...): what TMS can run on it is decided from
        them. Called by passes that plan (it reads one small file), not by those that decide nothing is due."""
        with self._lock:
            loaded = self._properties.get(row.id)
        current = _read_properties(table.storage)
        return self._load(row) if current is not None and current != loaded else table

    def _load(self, row: RegisteredTable) -> HudiTable:
        # Outside the lock: loading reads the whole timeline. The properties are read first: a change
        # in between makes them differ from what is loaded, and the next pass loads the table again.
        properties = _read_properties(open_storage(row.base_path))
        table = HudiTable.load(row.base_path, watcher=self.watcher)
        with self._lock:
            self._drop(self._tables.pop(row.id, None))
            self._tables[row.id] = table
            self._properties[row.id] = properties
            while len(self._tables) > self.capacity:
                table_id, dropped = self._tables.popitem(last=False)
                self._drop(dropped)
                self._properties.pop(table_id, None)
        return table

    def forget(self, table_id: int) -> None:
        """Drop a table whose files could not be read: the next pass loads it afresh."""
        with self._lock:
            self._drop(self._tables.pop(table_id, None))
            self._properties.pop(table_id, None)

    def _drop(self, table: HudiTable | None) -> None:
        if table is not None and self.watcher is not None:
            self.watcher.forget(table.timeline.changes)


def _read_properties(storage: Storage) -> bytes | None:
    """The bytes of `hoodie.properties` (compared, not parsed: a pass reads them); None while a writer
    rewrites it (Hudi keeps a backup meanwhile)."""
    try:
        return storage.read_bytes(PROPERTIES)
    except FileNotFoundError:
        return None
