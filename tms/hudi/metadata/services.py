"""The metadata table's own table services, run as Hudi's metadata writer runs them before each delta commit it
adds (HoodieBackedTableMetadataWriter.performTableServices), under the data table's lock: what a crash left
pending is finished first, then a clean (tms.hudi.metadata.clean), then a compaction
(tms.hudi.metadata.compaction), each only when due, and neither while an index is being built. The MDT's archival
is the archive task's (tms.execute.archive_task), as the data table's."""
from __future__ import annotations

from ..table.hudi_table import HudiTable
from ..timeline.instant import Action
from .clean import clean_if_due, finish_pending_cleans
from .compaction import compact_if_due, finish_pending_compactions
from .reader import MetadataTable, inflight_metadata_partitions


def run_table_services(data: HudiTable, mdt: MetadataTable) -> MetadataTable:
    """Run the services due on `data`'s MDT `mdt`: the MDT as it is after them (`mdt` itself if none ran)."""
    if finish_pending_compactions(data, mdt) | finish_pending_cleans(mdt):
        mdt = MetadataTable(data)
    if mdt.table.timeline.pending():
        return mdt   # a delta commit left pending: its writer's retry or rollback settles it first
    if inflight_metadata_partitions(data) or data.timeline.pending((Action.INDEXING,)):
        return mdt   # an index being built: its file groups are the indexer's until it completes
    if clean_if_due(data, mdt) is not None:
        mdt = MetadataTable(data)
    if compact_if_due(data, mdt) is not None:
        mdt = MetadataTable(data)
    return mdt
