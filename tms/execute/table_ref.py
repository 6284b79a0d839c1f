"""What a task carries to reach its table from any process (a Spark executor on another machine): the
base path and the table's properties, and which instants' data counts. Both pickle cheaply, unlike an
open HudiTable with its loaded timeline."""
from __future__ import annotations

from dataclasses import dataclass

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import TableConfig
from tms.hudi.timeline.timeline import Timeline


@dataclass(frozen=True)
class TableRef:
    base_uri: str
    props: tuple[tuple[str, str], ...]
    context: HudiContext = DEFAULT_CONTEXT  # the table's (its storage options and zone)

    @classmethod
    def of(cls, table: HudiTable) -> TableRef:
        return cls(table.base_path, tuple(sorted(table.config.props.items())), table.context)

    def storage(self) -> Storage:
        return self.context.open_storage(self.base_uri)

    def config(self) -> TableConfig:
        return TableConfig(dict(self.props), self.context.local_zone)


@dataclass(frozen=True)
class ValidInstants:
    """Instants whose log blocks are read, as Hudi's log scanner decides: completed on the active timeline,
    or absent from it and older than its start (archived, hence completed: Timeline.start). Blocks of pending or
    failed instants and rolled-back blocks are skipped (the latter by their rollback command blocks)."""

    completed: frozenset[str]
    timeline_start: str
    pending: frozenset[str] = frozenset()

    @classmethod
    def of(cls, timeline: Timeline) -> ValidInstants:
        instants = timeline.instants()
        return cls(frozenset(i.timestamp for i in instants if i.is_completed), timeline.start() or "",
                   frozenset(i.timestamp for i in instants if not i.is_completed))

    def __call__(self, timestamp: str) -> bool:
        return timestamp in self.completed or (timestamp < self.timeline_start and timestamp not in self.pending)
