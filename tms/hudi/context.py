"""What the library's caller passes it explicitly, as hudi-rs's `Storage::new(options, configs)` and pyiceberg's
`load_file_io(properties, location)` take their options: how the store of each path is reached (fsspec options)
and the zone of LOCAL-timeline tables. The library reads no settings, no environment and no module state: a
table loaded with a context keeps it (`HudiTable.context`), and what the library opens from that table (its
metadata table, its lock) is opened with the same context."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from .storage.table_storage import Storage, open_storage
from .timeline.zone import system_zone

StorageOptionsOf = Callable[[str], dict[str, Any] | None]


@dataclass(frozen=True, eq=False)
class HudiContext:
    """`storage_options`: the fsspec options of the store a path is on (None, or None for a path: the backend's
    defaults, which read the store's usual environment variables); picklable where tables are read on Spark
    executors. `local_zone`: the zone of LOCAL-timeline tables (None: this host's zone, `system_zone`)."""

    storage_options: StorageOptionsOf | None = None
    local_zone: tzinfo | None = None

    def options_of(self, path: str) -> dict[str, Any] | None:
        return self.storage_options(path) if self.storage_options else None

    def zone(self) -> tzinfo:
        return self.local_zone if self.local_zone is not None else system_zone()

    def open_storage(self, path: str) -> Storage:
        """The backend for `path`, with the options of its store."""
        return open_storage(path, self.options_of(path))


DEFAULT_CONTEXT = HudiContext()
