"""Hudi's delete_partition: one `replacecommit` (operation type DELETE_PARTITION) whose
`partitionToReplaceFileIds` lists every file group of the partitions, so that readers skip them at once and
the cleaner deletes their files later; the metadata table drops the partitions from its partition list (and
their keys from the record index) in the same instant. Partition TTL runs it on the expired partitions.

The instant is written under the table's lock, and refused (before anything is written) while a write or a
compaction or clustering plan is pending in one of the partitions: its files would outlive the deletion."""
from __future__ import annotations

import json
from collections.abc import Sequence

from tms.hudi.errors import HudiError, UnsupportedTableError
from tms.hudi.fs_view.plans import pending_clustering_groups, pending_compaction_groups
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.writer import unmaintainable_partitions_for_writes, write_metadata_commit
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import (
    DELETE_PARTITION,
    CommitMetadata,
    RequestedReplaceMetadata,
    serialize_commit_metadata,
    serialize_requested_replace_metadata,
)

from .base_files import latest_data_schema


def delete_partitions(table: HudiTable, partitions: Sequence[str], transactions: TransactionManager | None = None,
                      extra_metadata: dict[str, str] | None = None) -> str:
    """Delete `partitions` (relative paths) in one replacecommit; returns its instant time. `extra_metadata`:
    more entries of its extra metadata (in its requested plan too, so that a pending one says who wrote it)."""
    if not partitions:
        raise HudiError("no partition to delete")
    if "" in partitions or not table.config.partition_fields:
        raise UnsupportedTableError(f"table {table.config.name} is not partitioned: it has no partition to delete")
    stale = unmaintainable_partitions_for_writes(table)
    if stale:
        raise UnsupportedTableError(f"table {table.config.name}: TMS cannot keep the metadata table partition(s) "
                                    f"{', '.join(stale)} valid through a partition deletion")
    transactions = transactions or TransactionManager.single_writer(table)
    wanted = set(partitions)
    with transactions.transaction():
        tl = table.timeline
        tl.reload()
        _require_nothing_pending_in(table, wanted)
        view = table.file_system_view()
        unknown = wanted - set(view.partitions)
        if unknown:
            raise HudiError(f"table {table.config.name} has no partition {', '.join(sorted(unknown))}")
        replaced = {p: sorted(g.file_id for g in view.file_groups(p)) for p in sorted(wanted)}
        requested = tl.create_requested(Action.REPLACE_COMMIT, serialize_requested_replace_metadata(
            RequestedReplaceMetadata(operation_type=DELETE_PARTITION, extra_metadata=dict(extra_metadata or {}))))
        meta = CommitMetadata(partition_to_write_stats={}, compacted=False, operation_type=DELETE_PARTITION,
                              partition_to_replace_file_ids=replaced,
                              extra_metadata={**(extra_metadata or {}),
                                              "schema": json.dumps(latest_data_schema(table))})
        content = serialize_commit_metadata(meta, table.config.version)
        inflight = tl.transition_to_inflight(requested, content)
        write_metadata_commit(table, inflight.timestamp, Action.REPLACE_COMMIT, meta)  # the MDT first, as Java
        tl.complete(inflight, content)
    return requested.timestamp


def _require_nothing_pending_in(table: HudiTable, partitions: set[str]) -> None:
    tl = table.timeline
    plans = {**pending_compaction_groups(table), **pending_clustering_groups(table)}
    held = sorted({ts for (p, _fid), ts in plans.items() if p in partitions})
    if held:
        raise HudiError(f"partitions of table {table.config.name} are in pending plan(s) {', '.join(held)}: "
                        "they are deleted once those complete")
    writes = [i.timestamp for i in tl.inflight_writes()]
    if writes:
        raise HudiError(f"table {table.config.name} has pending write(s) {', '.join(writes)}, which may write into "
                        "the partitions: they are deleted once no write is pending")
