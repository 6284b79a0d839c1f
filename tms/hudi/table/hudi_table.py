"""A Hudi table: its storage, `hoodie.properties` and timeline, and the views built from them."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..context import DEFAULT_CONTEXT, HudiContext
from ..errors import HudiError, TableNotFoundError
from ..fs_view.partitions import PartitionListing
from ..fs_view.view import FileSystemView
from ..storage.table_storage import Storage, open_storage
from ..timeline.instant import Instant
from ..timeline.timeline import Timeline
from ..timeline.watch import TimelineWatcher
from .properties import TableConfig, format_properties

PROPERTIES = ".hoodie/hoodie.properties"


class HudiTable:
    def __init__(self, storage: Storage, config: TableConfig, watcher: TimelineWatcher | None = None,
                 context: HudiContext = DEFAULT_CONTEXT):
        """`watcher`: feed the timeline the changes of its folder rather than list it on every reload
        (used where a table stays loaded: the planner's cache). `context`: what the table was loaded with,
        for what is opened from it (its metadata table, its lock)."""
        self.storage = storage
        self.config = config
        self.context = context
        changes = storage.change_feed(config.timeline_dir, watcher) if watcher else None
        self.timeline = Timeline(storage, config, changes)

    @classmethod
    def load(cls, base_path: str, storage_options: dict[str, Any] | None = None, *,
             watcher: TimelineWatcher | None = None, context: HudiContext = DEFAULT_CONTEXT) -> HudiTable:
        """The table at `base_path`, reached with `storage_options` (default: the context's for the path),
        its LOCAL timeline in the context's zone."""
        if storage_options is None:
            storage_options = context.options_of(base_path)
        storage = open_storage(base_path, storage_options)
        try:
            text = storage.read_bytes(PROPERTIES).decode("utf-8")
        except (FileNotFoundError, NotADirectoryError):
            raise TableNotFoundError(f"no Hudi table at {base_path}: {PROPERTIES} not found") from None
        except UnicodeDecodeError:
            raise HudiError(f"{base_path}/{PROPERTIES} is not text") from None
        return cls(storage, TableConfig.from_text(text, context.local_zone), watcher, context)

    @classmethod
    def create(cls, base_path: str, props: dict[str, str], storage_options: dict[str, Any] | None = None, *,
               context: HudiContext = DEFAULT_CONTEXT) -> HudiTable:
        """Initialise a new table (fails if one exists at the path)."""
        if storage_options is None:
            storage_options = context.options_of(base_path)
        storage = open_storage(base_path, storage_options)
        if storage.exists(PROPERTIES):
            raise HudiError(f"a Hudi table already exists at {base_path}")
        config = TableConfig(dict(props), context.local_zone)
        config.validate()
        storage.makedirs(config.timeline_dir)
        storage.makedirs(".hoodie/.temp")
        storage.makedirs(".hoodie/.heartbeat")
        storage.write_atomic(PROPERTIES, format_properties(config.props, "Properties saved by TMS").encode())
        return cls(storage, config, context=context)

    @property
    def base_path(self) -> str:
        return self.storage.base_uri

    @property
    def name(self) -> str:
        return self.config.name

    def file_system_view(self, as_of: str | None = None, partitions: Iterable[str] | None = None,
                         listing: PartitionListing | None = None) -> FileSystemView:
        """The file groups and slices visible at `as_of` (default: the latest completed instant), of `partitions`
        only if given (each listed on its own), or of those `listing` names, else of the whole table."""
        return FileSystemView(self, as_of=as_of, partitions=partitions, listing=listing)

    def reload(self) -> list[Instant]:
        return self.timeline.reload()
