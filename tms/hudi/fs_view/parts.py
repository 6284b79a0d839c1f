"""What the views over a table (file system view, pending plans) read of it: its storage, configuration
and timeline. A protocol, so that those views need not import the table module that builds them."""
from __future__ import annotations

from typing import Protocol

from ..storage.table_storage import Storage
from ..table.properties import TableConfig
from ..timeline.timeline import Timeline


class TableParts(Protocol):
    @property
    def storage(self) -> Storage: ...

    @property
    def config(self) -> TableConfig: ...

    @property
    def timeline(self) -> Timeline: ...
