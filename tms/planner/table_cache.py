"""The tables a planner process has loaded, kept between passes: a timeline loaded once is afterwards
reloaded incrementally (only new instant files are parsed) and keeps its cache of completed instants.

A table's object is only used under the table's planning lock, so threads never share one at a time;
the cache itself is guarded for the threads that look up different tables at once."""
from __future__ import annotations

import threading
from collections import OrderedDict

from tms.db import RegisteredTable
from tms.hudi.table import HudiTable


class TableCache:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._tables: OrderedDict[int, HudiTable] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, row: RegisteredTable) -> HudiTable:
        """The loaded table of a registered one (loaded now if absent, or if its base path changed)."""
        with self._lock:
            table = self._tables.get(row.id)
            if table is not None and table.base_path == row.base_path.rstrip("/"):
                self._tables.move_to_end(row.id)
                return table
        table = HudiTable.load(row.base_path)  # outside the lock: loading reads the whole timeline
        with self._lock:
            self._tables[row.id] = table
            while len(self._tables) > self.capacity:
                self._tables.popitem(last=False)
        return table

    def forget(self, table_id: int) -> None:
        """Drop a table whose files could not be read: the next pass loads it afresh."""
        with self._lock:
            self._tables.pop(table_id, None)
