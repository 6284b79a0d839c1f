"""The record TTL task: expired records of file groups that no compaction or clustering plan holds (those drop
their expired records themselves) are removed as Hudi deletes, in one write — delete blocks in the file groups'
log files on MERGE_ON_READ, the file groups' base files rewritten on COPY_ON_WRITE — so that incremental readers
and the record index see them. At most `max_file_groups` file groups per run (the first in partition and file
id order holding expired records); a later run takes the next ones.

Each delete carries the expired record's own ordering value: under event-time ordering a newer write of the
record made meanwhile wins over the delete, as Hudi merges them."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa

from tms.hudi.errors import HudiError
from tms.hudi.fs_view.plans import pending_clustering_groups, pending_compaction_groups
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.records.merge import merge_slice
from tms.hudi.records.schema import META_FIELDS
from tms.hudi.records.schema_evolution import full_arrow_schema, latest_data_schema
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.serde import TTL_CUTOFF_KEY, TTL_FIELD_KEY
from tms.record_ttl import expired_mask, ttl_field_refusal

DEFAULT_MAX_FILE_GROUPS = 100


@dataclass(frozen=True)
class TtlDeletion:
    instant: str | None  # the delete commit (None: nothing had expired)
    deleted: int         # records deleted
    file_groups: int     # file groups they were in


def expired_records(table: HudiTable, field: str, cutoff: datetime, max_file_groups: int = DEFAULT_MAX_FILE_GROUPS
                    ) -> tuple[pa.Table | None, int]:
    """The expired records (data fields) of the first `max_file_groups` file groups that hold any and are in no
    pending compaction or clustering plan, and how many file groups they are in."""
    data_schema = latest_data_schema(table)
    if data_schema is None:
        return None, 0
    schema = full_arrow_schema(data_schema)
    refusal = ttl_field_refusal(pa.schema([f for f in schema if f.name not in META_FIELDS]), field)
    if refusal:
        raise HudiError(refusal)
    view = table.file_system_view()
    busy = set(pending_compaction_groups(table)) | set(pending_clustering_groups(table))
    found: list[pa.Table] = []
    for fs in sorted(view.merged_latest_slices(), key=lambda s: (s.partition, s.file_id)):
        if len(found) >= max_file_groups:
            break
        if (fs.partition, fs.file_id) in busy:
            continue
        rows = merge_slice(table.storage, table.config, fs, view.is_completed, schema=schema)
        expired = rows.filter(expired_mask(rows, field, cutoff))
        if expired.num_rows:
            found.append(expired.drop_columns([c for c in META_FIELDS if c in expired.column_names]))
    if not found:
        return None, 0
    return pa.concat_tables(found, promote_options="permissive"), len(found)


def delete_expired_records(table: HudiTable, field: str, cutoff: datetime, *,
                           transactions: TransactionManager | None = None,
                           max_file_groups: int = DEFAULT_MAX_FILE_GROUPS,
                           extra_metadata: dict[str, str] | None = None) -> TtlDeletion:
    """Delete the records of `table` whose `field` is before `cutoff` (see the module docstring);
    `extra_metadata`: more entries of the delete commit's extra metadata."""
    table.timeline.reload()
    expired, groups = expired_records(table, field, cutoff, max_file_groups)
    if expired is None:
        return TtlDeletion(None, 0, 0)
    # The TTL state shows these.
    ttl = {**(extra_metadata or {}), TTL_FIELD_KEY: field, TTL_CUTOFF_KEY: str(int(cutoff.timestamp() * 1000))}
    result = HudiWriter(table, transactions=transactions).write(expired, "delete", extra_metadata=ttl)
    return TtlDeletion(result.instant, expired.num_rows, groups)
