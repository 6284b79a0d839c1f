"""Keeping a table's metadata table (MDT) in sync with the instants TMS completes, as Hudi's
`HoodieBackedTableMetadataWriter` does: for a data instant T, an MDT delta commit with the same instant
time T whose log files (one per MDT file group touched, each holding one HFile data block, keys sorted)
carry the records `HoodieTableMetadataUtil` derives from T's metadata. It is written, and completed on the
MDT's timeline, before T completes on the data table.

What each action changes (and what stays valid without a change):
- `files`: the files written (with sizes) and deleted (marked), partitions added or dropped.
- `column_stats`: entries for each base file written (from its footer), tombstones for files deleted.
- `partition_stats`: recomputed (tight bounds) for each partition whose files changed.
- `bloom_filters`: an entry for each base file written (the footer's bloom filter), tombstones for deleted.
- `record_index`: clustering moves records to new file groups: their new locations. Compaction keeps each
  record in its file group; clean and the rollback of a failed write change no live record.
- `secondary_index_*`: keyed by (secondary key, record key): none of TMS's actions changes a live record's
  key or values, so they stay valid untouched.
- `expr_index_*` and partitions TMS does not know: not maintained; `unmaintainable_partitions` names them
  so that planning refuses the action.

An MDT delta commit that must not count (a failed attempt's, retried or given up, or the one of a failed
data instant F that a rollback R removes) is rolled back on the MDT as Hudi's MDT write client does: a
`rollback` instant on the MDT timeline whose plan deletes the log files holding only its blocks and marks its
blocks in a log file it shares with other instants' blocks (a v6 MDT's writers append to the latest log file
of a slice) with a rollback command block; the delta commit's completed file goes first (readers stop
reading it), its requested and inflight files before the rollback completes. So no MDT instant is left
inflight, no block is read twice, and a retried delta commit of the same instant time counts.
For the rollback R of F, as `HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata)`:
- table version 8+: the MDT rollback of F has R's instant time; no MDT delta commit (the files F wrote were
  listed only by F's delta commit).
- table version 6: an MDT delta commit R records R's file changes (files deleted, command-block log files
  added), then F's delta commit is rolled back at R + "006".
"""
from __future__ import annotations

import json
import posixpath
import time as clock
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import HudiError, UnsupportedTableError
from ..fs_view.file_names import LogFileName, write_token
from ..fs_view.view import FileSlice
from ..log_format.hfile import write_hfile
from ..log_format.log_file import BlockType, HeaderKey, _block_bytes, delete_block, read_log_file
from ..log_format.rollback_blocks import write_rollback_block_file
from ..records.base_format import PARQUET, table_base_format
from ..records.bloom import DYNAMIC_V0, dynamic_bloom_filter
from ..records.bloom import FOOTER_KEY as BLOOM_FOOTER_KEY
from ..records.bloom import TYPE_CODE_KEY as BLOOM_TYPE_CODE_KEY
from ..records.schema import with_meta_fields
from ..storage.paths import table_relative
from ..table.hudi_table import HudiTable
from ..table.version_traits import SUPPORTED_VERSIONS
from ..timeline.instant import Action, Instant, State
from ..timeline.serde import (
    DELETE_PARTITION,
    TTL_CUTOFF_KEY,
    CleanMetadata,
    CommitMetadata,
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    WriteStat,
    parse_compaction_plan,
    parse_rollback_plan,
    serialize_commit_metadata,
    serialize_rollback_metadata,
    serialize_rollback_plan,
)
from . import keys as K
from .avro_schema import schema_text
from .listing import file_instant
from .reader import MetadataTable, inflight_metadata_partitions, metadata_partitions, refresh_metadata_partitions
from .records import (
    NAMESPACE,
    MetadataRecord,
    bloom_filter_record,
    column_stats_record,
    encode_record,
    files_record,
    merge,
    merge_column_stats,
    record_index_record,
)
from .services import run_table_services

INDEX_DEFINITIONS = ".hoodie/.index_defs/index.json"
MAX_INDEXED_COLUMNS = 32          # hoodie.metadata.index.column.stats.max.columns.to.index
# The suffix of the MDT rollback a v6 table's rollback R makes (R + suffix): HoodieTableMetadataUtil's
# OperationSuffix.ROLLBACK, kept by Hudi 1.x's writer for table version 6.
V6_ROLLBACK_SUFFIX = "006"

# The table services whose instants the metadata-table writer keeps the MDT through, by their action names.
_SERVICES = (Action.COMPACTION, Action.CLUSTERING, Action.CLEAN, Action.ROLLBACK, Action.RESTORE)


def unmaintainable_partitions(table: HudiTable, service: str) -> list[str]:
    """The MDT partitions of `table` that TMS cannot keep valid through `service` (compaction, clustering,
    clean, rollback, restore): planning must refuse the service for the table, naming them. Empty for a table
    without an MDT."""
    if service not in _SERVICES:
        raise ValueError(f"{service!r} is not a table service ({', '.join(_SERVICES)})")
    # A partition an indexer is still building: the services wait for it (another process's indexer may not
    # catch up with what a service writes before the partition's file groups exist). Writes go on
    # (`unmaintainable_partitions_for_writes`), as Hudi's writers do.
    out = list(inflight_metadata_partitions(table))
    for p in metadata_partitions(table):
        if p in K.MAINTAINED or p.startswith(K.SECONDARY_INDEX_PREFIX):
            continue
        if p.startswith(K.EXPRESSION_INDEX_PREFIX) and service == Action.ROLLBACK:
            continue   # the rollback of a failed write changes no committed file
        out.append(p)
    if metadata_partitions(table) and (table.config.version not in SUPPORTED_VERSIONS
                                       or table_base_format(table.config) != PARQUET):
        # The MDT's statistics and record index are read from Parquet base files; another format's would
        # go stale, so no service runs on such a table while it has a metadata table.
        out = metadata_partitions(table)
    return sorted(set(out))


def unmaintainable_partitions_for_writes(table: HudiTable) -> list[str]:
    """The MDT partitions `tms write` cannot keep valid (it maintains files, column_stats, partition_stats,
    bloom_filters and record_index, built or being built by an indexer; a secondary or expression index would
    go stale)."""
    return sorted({p for p in metadata_partitions(table) + inflight_metadata_partitions(table)
                   if p not in K.MAINTAINED})


def require_maintainable(table: HudiTable, service: str) -> None:
    """Raise UnsupportedTableError naming the MDT partitions TMS cannot keep valid through `service`."""
    bad = unmaintainable_partitions(table, service)
    if bad:
        raise UnsupportedTableError(
            f"table {table.config.name}: TMS cannot keep the metadata table partition(s) {', '.join(bad)} valid "
            f"through a {service}; the {service} is left to the table's writers")


# --- values of column statistics ------------------------------------------------------------------

# HoodieValueTypeInfo.typeOrdinal (index version 2, Hudi 1.1), by Arrow type.
_VALUE_TYPE = {"bool": 2, "int32": 3, "int64": 4, "float": 5, "double": 6, "string": 7, "binary": 8,
               "decimal": 10, "date32": 12, "timestamp[us]": 16, "timestamp[ms]": 15, "large_string": 7}


def _wrap(value: Any, arrow_type: pa.DataType, v2: bool) -> tuple[str, dict[str, Any]] | None:
    """A statistic as Hudi wraps it (`wrapValueIntoAvro`, index v1 for tables v6/v8, v2 for v9)."""
    if value is None:
        return None
    name, out = None, value
    if pa.types.is_boolean(arrow_type):
        name = "BooleanWrapper"
    elif pa.types.is_integer(arrow_type):
        name = "LongWrapper" if arrow_type.bit_width == 64 else "IntWrapper"
        out = int(value)
    elif pa.types.is_float32(arrow_type):
        name = "FloatWrapper"
    elif pa.types.is_floating(arrow_type):
        name = "DoubleWrapper"
    elif pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        name = "StringWrapper"
    elif pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        name = "BytesWrapper"
    elif pa.types.is_date(arrow_type):
        days = (value - date(1970, 1, 1)).days if isinstance(value, date) else int(value)
        name, out = ("IntWrapper" if v2 else "DateWrapper"), days
    elif pa.types.is_timestamp(arrow_type):
        if isinstance(value, datetime):
            v = value if value.tzinfo else value.replace(tzinfo=UTC)
            micros = int(v.timestamp()) * 1_000_000 + v.microsecond
        else:
            micros = int(value)
        name, out = ("LongWrapper" if v2 else "TimestampMicrosWrapper"), micros
    elif pa.types.is_decimal(arrow_type):
        d = Decimal(value)
        unscaled = int(d.scaleb(arrow_type.scale))
        raw = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
        name, out = ("BytesWrapper" if v2 else "DecimalWrapper"), raw
    elif isinstance(value, time):
        return None
    if name is None:
        return None
    return (f"{NAMESPACE}.{name}", {"value": out})


def _value_type(arrow_type: pa.DataType) -> dict[str, Any] | None:
    key = "decimal" if pa.types.is_decimal(arrow_type) else str(arrow_type)
    ordinal = _VALUE_TYPE.get(key)
    if ordinal is None:
        return None
    info = f"{arrow_type.precision},{arrow_type.scale}" if pa.types.is_decimal(arrow_type) else None
    return {"typeOrdinal": ordinal, "additionalInfo": info}


def _footer_column_stats(meta: pq.FileMetaData, arrow_schema: pa.Schema, file_name: str, columns: list[str],
                         v2: bool) -> dict[str, dict[str, Any]]:
    """Column name -> HoodieMetadataColumnStats of a parquet file, from its footer (all row groups), as
    `ParquetUtils.readColumnStatsFromMetadata` + `HoodieColumnRangeMetadata.merge` give them."""
    acc: dict[str, dict[str, Any]] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for ci in range(group.num_columns):
            col = group.column(ci)
            name = col.path_in_schema
            if name not in columns or name not in arrow_schema.names:
                continue
            a_type = arrow_schema.field(name).type
            st = col.statistics
            has = st is not None and st.has_min_max
            cur = {"min": st.min if has else None, "max": st.max if has else None,
                   "nulls": (st.null_count if st is not None and st.has_null_count else 0),
                   "values": col.num_values, "size": col.total_compressed_size,
                   "usize": col.total_uncompressed_size}
            prev = acc.get(name)
            if prev is None:
                acc[name] = cur
            else:
                for bound, fn in (("min", min), ("max", max)):
                    vals = [v for v in (prev[bound], cur[bound]) if v is not None]
                    prev[bound] = fn(vals) if vals else None
                for f in ("nulls", "values", "size", "usize"):
                    prev[f] += cur[f]
    out: dict[str, dict[str, Any]] = {}
    for name, s in acc.items():
        a_type = arrow_schema.field(name).type
        stats: dict[str, Any] = {
            "fileName": file_name, "columnName": name,
            "minValue": _wrap(s["min"], a_type, v2), "maxValue": _wrap(s["max"], a_type, v2),
            "valueCount": s["values"], "nullCount": s["nulls"], "totalSize": s["size"],
            "totalUncompressedSize": s["usize"], "isDeleted": False, "isTightBound": False}
        if v2:
            stats["valueType"] = _value_type(a_type)
        out[name] = stats
    return out


def _deleted_column_stats(file_name: str, column: str, v2: bool) -> dict[str, Any]:
    stats: dict[str, Any] = {
        "fileName": file_name, "columnName": column, "minValue": None, "maxValue": None,
        "valueCount": None, "nullCount": None, "totalSize": None, "totalUncompressedSize": None,
        "isDeleted": True, "isTightBound": False}
    if v2:
        stats["valueType"] = None
    return stats


# --- the writer -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Footer:
    metadata: pq.FileMetaData
    schema_arrow: pa.Schema


@dataclass
class _FileChange:
    partition: str
    added: dict[str, int]
    deleted: list[str]


class MetadataWriter:
    """Writes the MDT side of the instants TMS completes on `table`."""

    def __init__(self, table: HudiTable):
        self.table = table
        refresh_metadata_partitions(table)   # an indexer may have built or dropped one since the table was loaded
        built = metadata_partitions(table)
        building = [p for p in inflight_metadata_partitions(table) if p not in built]
        mdt = MetadataTable.open(table) if built or building else None
        if built and mdt is None:
            raise HudiError(f"table {table.config.name} lists metadata partitions "
                            f"({', '.join(built)}) but has no metadata table")
        # As Hudi's writers: a partition an indexer is building is updated too, once its file groups exist.
        self.partitions = built + [p for p in building if mdt is not None and mdt.file_slices(p)]
        self.mdt = mdt if self.partitions else None
        self.v2 = table.config.traits.metadata_records_v2
        self.schema = schema_text(table.config.traits)
        self._columns: list[str] | None = None

    @property
    def enabled(self) -> bool:
        return self.mdt is not None

    @property
    def _open_mdt(self) -> MetadataTable:
        """The MDT, for the code that runs only when `enabled`."""
        if self.mdt is None:
            raise HudiError(f"table {self.table.config.name} has no metadata table")
        return self.mdt

    # --- public API -------------------------------------------------------------------------------
    def commit(self, instant: str, action: str, metadata: CommitMetadata | CleanMetadata) -> None:
        """The MDT delta commit of a data instant (`action`: commit / deltacommit / replacecommit with
        its CommitMetadata, or clean with its CleanMetadata), completed on the MDT."""
        if not self.enabled:
            return
        self._run_table_services()
        self._roll_back_delta_commit(instant)   # an earlier attempt's, as Java's re-attempt does
        if isinstance(metadata, CleanMetadata):
            # Every file the clean set out to delete leaves the listing, deleted now or already gone (a retried
            # task's files, which its second attempt reports failed), as Java's files partition takes a clean's
            # delete path patterns (HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords).
            changes = [_FileChange(p.partition_path or "", {}, [posixpath.basename(f) for f in
                                                                p.delete_path_patterns or p.success_delete_files])
                       for p in metadata.partition_metadata.values()]
            dropped = [p.partition_path or "" for p in metadata.partition_metadata.values() if p.is_partition_deleted]
            records, deletes = self._records(instant, changes, dropped=dropped)
        else:
            changes, written = [], []
            for part, stats in (metadata.partition_to_write_stats or {}).items():
                changes.append(_FileChange(part or "", {posixpath.basename(s.path): int(s.file_size_in_bytes)
                                                        for s in stats if s.path}, []))
                written += [s.path for s in stats if s.path]
            operation = (metadata.operation_type or "").upper()
            if operation == DELETE_PARTITION:
                # The partitions leave the MDT's partition list (their files go with the clean that deletes
                # them), and their keys leave the record index.
                dropped = sorted(metadata.partition_to_replace_file_ids or {})
                records, deletes = self._records(instant, [], dropped=dropped)
                if K.RECORD_INDEX in self.partitions:
                    deletes[K.RECORD_INDEX].extend(self._keys_in(set(dropped)))
                self._write_delta_commit(instant, records, deletes)
                return
            # Compaction keeps every record in its file group (the record index needs no change), unless it
            # dropped expired records (a record TTL), whose keys then leave the index.
            dropped_records = _dropped_records(metadata)
            compaction = (metadata.compacted or operation == "COMPACT") and not dropped_records
            # A clustering that dropped expired records leaves their keys in the groups it replaced.
            replaced = {(p, f) for p, fids in (metadata.partition_to_replace_file_ids or {}).items() for f in fids} \
                if dropped_records else set()
            records, deletes = self._records(instant, changes, index_records_of=[] if compaction else written,
                                             replaced=replaced)
            if dropped_records and metadata.compacted and deletes.get(K.RECORD_INDEX):
                # A key the compaction dropped may live on in a log file it did not read (written into the slice
                # it opened): the index keeps such a key where it is.
                live = self._keys_outside_the_plan(instant)
                deletes[K.RECORD_INDEX] = [k for k in deletes[K.RECORD_INDEX] if k not in live]
        self._write_delta_commit(instant, records, deletes)

    def rollback(self, instant: str, failed_instant: str, metadata: RollbackMetadata) -> None:
        """The MDT side of the rollback `instant` of the failed data instant `failed_instant` (see the module
        docstring); called before the failed instant leaves the data timeline, as Java does, so its MDT
        delta commit never counts for a reader (it does once its data instant is neither pending nor
        completed). Re-running it after a crash finishes what the first run left."""
        if not self.enabled:
            return
        self._run_table_services()
        v6 = not self.table.config.traits.log_files_named_by_writer
        listed = self._open_mdt.file_listing()
        changes = []
        for p in metadata.partition_metadata.values():
            part = p.partition_path or ""
            deleted = [n for n in (posixpath.basename(f) for f in p.success_delete_files) if n in listed.get(part, {})]
            added = {posixpath.basename(f): int(size) for f, size in (p.rollback_log_files or {}).items()}
            if added or deleted:
                changes.append(_FileChange(part, added, deleted))
        if v6 or changes:
            # Table version 8+ has changes to record only for a plan that marks log blocks (Java's plans
            # delete a v8+ failed write's files): the MDT rollback then takes a fresh instant time.
            self._roll_back_delta_commit(instant)   # a crashed earlier run's
            records, deletes = self._records(instant, changes)
            self._write_delta_commit(instant, records, deletes)
        self._roll_back_delta_commit(failed_instant, None if changes and not v6
                                     else instant + V6_ROLLBACK_SUFFIX if v6 else instant)

    def _run_table_services(self) -> None:
        """The MDT's own clean and compaction, before the delta commit that follows (tms.hudi.metadata.services)."""
        self.mdt = run_table_services(self.table, self._open_mdt)

    # --- the indexer's builders ------------------------------------------------------------------
    def file_records(self, mdt_partition: str, partition: str, files: dict[str, int],
                     instant: str) -> list[MetadataRecord]:
        """The `mdt_partition` records (column_stats or bloom_filters) of data files `files` (name -> size)
        of `partition`, as a commit writing them would give them."""
        saved, self.partitions = self.partitions, [mdt_partition]
        try:
            records, _ = self._records(instant, [_FileChange(partition, dict(files), [])])
        finally:
            self.partitions = saved
        return records.get(mdt_partition, [])

    def partition_stats(self, listing: dict[str, dict[str, int]],
                        column_stats: list[MetadataRecord]) -> list[MetadataRecord]:
        """Tight partition statistics of every partition of `listing` from the column statistics of its files."""
        return self._partition_stats(sorted(listing), listing, [], column_stats)

    # --- records ----------------------------------------------------------------------------------
    def _records(self, instant: str, changes: list[_FileChange], *, dropped: Iterable[str] = (),
                 index_records_of: Sequence[str] = (), replaced: set[tuple[str, str]] | None = None
                 ) -> tuple[dict[str, list[MetadataRecord]], dict[str, list[str]]]:
        """The records of the action's changes per MDT partition, and the keys it deletes per MDT partition
        (`replaced`: file groups whose keys the written files do not hold any more leave the record index)."""
        out: dict[str, list[MetadataRecord]] = defaultdict(list)
        deletes: dict[str, list[str]] = defaultdict(list)
        listing = self._open_mdt.file_listing()
        dropped = set(dropped)
        touched = sorted({c.partition for c in changes} - dropped)
        if K.FILES in self.partitions:
            if touched or dropped:
                out[K.FILES].append(files_record(
                    K.ALL_PARTITIONS_KEY, {K.partition_identifier(p): 0 for p in touched},
                    [K.partition_identifier(p) for p in sorted(dropped)], all_partitions=True))
            for c in changes:
                if c.added or c.deleted:
                    out[K.FILES].append(files_record(K.partition_identifier(c.partition), c.added, c.deleted))
        written = [(c.partition, name) for c in changes for name in c.added if name.endswith(".parquet")]
        deleted = [(c.partition, name) for c in changes for name in c.deleted]
        footers = {}
        if K.COLUMN_STATS in self.partitions or K.BLOOM_FILTERS in self.partitions:
            for part, name in written:
                footers[(part, name)] = self._footer(posixpath.join(part, name) if part else name)
        if K.COLUMN_STATS in self.partitions:
            columns = self._indexed_columns()
            existing = self._open_mdt.records(K.COLUMN_STATS) if deleted else {}
            for (part, name), pf in footers.items():
                for col, stats in _footer_column_stats(pf.metadata, pf.schema_arrow, name, columns, self.v2).items():
                    out[K.COLUMN_STATS].append(column_stats_record(K.column_stats_key(part, name, col), stats))
            for part, name in deleted:
                for col in columns:
                    key = K.column_stats_key(part, name, col)
                    if key in existing:
                        out[K.COLUMN_STATS].append(column_stats_record(key, _deleted_column_stats(name, col, self.v2)))
        if K.PARTITION_STATS in self.partitions:
            out[K.PARTITION_STATS].extend(self._partition_stats(touched, listing, changes, out.get(K.COLUMN_STATS, [])))
        if K.BLOOM_FILTERS in self.partitions:
            existing = self._open_mdt.records(K.BLOOM_FILTERS)
            for (part, name), pf in footers.items():
                kv = pf.metadata.metadata or {}
                bloom, code = kv.get(BLOOM_FOOTER_KEY), kv.get(BLOOM_TYPE_CODE_KEY, DYNAMIC_V0).decode()
                if bloom is None:   # a file written without one: the filter of its keys, as Java builds it
                    rel = posixpath.join(part, name) if part else name
                    keys = pq.read_table(pa.BufferReader(self.table.storage.read_bytes(rel)),
                                         columns=["_hoodie_record_key"]).column(0).combine_chunks()
                    bloom, code = dynamic_bloom_filter(keys), DYNAMIC_V0.decode()
                out[K.BLOOM_FILTERS].append(bloom_filter_record(K.bloom_filter_key(part, name), code, instant,
                                                                bloom, False))
            for part, name in deleted:
                key = K.bloom_filter_key(part, name)
                if key in existing:
                    old = _payload(existing[key], existing[key].bloom_filter, "bloom filter")
                    out[K.BLOOM_FILTERS].append(bloom_filter_record(key, old["type"], instant, b"", True))
        if K.RECORD_INDEX in self.partitions and index_records_of:
            located, gone = self._record_index_changes(instant, index_records_of)
            out[K.RECORD_INDEX].extend(located)
            deletes[K.RECORD_INDEX].extend(gone)
            if replaced:
                moved = {rec.key for rec in located}
                index = self._open_mdt.records(K.RECORD_INDEX)
                deletes[K.RECORD_INDEX].extend(sorted(
                    k for k, rec in index.items() if rec.location is not None and k not in moved
                    and (rec.location.partition, rec.location.file_id) in replaced))
        return out, deletes

    def _keys_outside_the_plan(self, instant: str) -> set[str]:
        """The record keys in the log files of the file groups the compaction at `instant` rewrote that its plan
        does not list (in any state: erring towards keeping a key)."""
        plan = parse_compaction_plan(self.table.timeline.read_plan(instant))
        storage = self.table.storage
        keys: set[str] = set()
        for op in plan.operations:
            part = op.partition_path or ""
            planned = {posixpath.basename(p) for p in op.delta_file_paths}
            for info in storage.listdir(part):
                log = LogFileName.parse(info.name)
                if log is None or log.file_id != op.file_id or info.name in planned:
                    continue
                for block in read_log_file(storage.read_bytes(info.path)):
                    if block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                        keys.update(block.records().column("_hoodie_record_key").to_pylist())
        return keys

    def _keys_in(self, partitions: set[str]) -> list[str]:
        """The record index's keys located in `partitions`."""
        index = self._open_mdt.records(K.RECORD_INDEX)
        return sorted(k for k, rec in index.items()
                      if rec.location is not None and rec.location.partition in partitions)

    def _record_index_changes(self, instant: str, written: Sequence[str]) -> tuple[list[MetadataRecord], list[str]]:
        """New locations and deleted keys from the files an instant wrote: a base file's keys are where it
        is (a rewritten base file no longer holds the keys it dropped); a log file's blocks of this instant
        add keys (data blocks) or delete them (delete blocks)."""
        index = self._open_mdt.records(K.RECORD_INDEX)
        zone = self.table.config.timeline_zone
        at: dict[tuple[str, str], set[str]] = defaultdict(set)
        for key, rec in index.items():
            loc = rec.location
            if loc is None:
                raise HudiError(f"MDT record_index record {key!r} has no record location")
            at[(loc.partition, loc.file_id)].add(key)
        located, gone = [], []
        for rel in written:
            part, name = posixpath.dirname(rel), posixpath.basename(rel)
            log = LogFileName.parse(name)
            fid = log.file_id if log else name.split("_", 1)[0]
            here = at.get((part, fid), set())
            if log is None:
                keys = pq.read_table(pa.BufferReader(self.table.storage.read_bytes(rel)),
                                     columns=["_hoodie_record_key"]).column(0).to_pylist()
                ts = file_instant(name)
                if ts is None:
                    raise HudiError(f"no instant time in the name of base file {rel}")
                located += [record_index_record(k, part, fid, ts, zone=zone) for k in keys if k not in here]
                gone += sorted(here - set(keys))
                continue
            for block in read_log_file(self.table.storage.read_bytes(rel)):
                if block.instant_time != instant:
                    continue
                if block.block_type is BlockType.DELETE:
                    gone += [k for k, _p, _o in block.deleted_keys() if k in here]
                elif block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                    keys = block.records().column("_hoodie_record_key").to_pylist()
                    located += [record_index_record(k, part, fid, instant, zone=zone)
                                for k in keys if k not in here]
        return located, gone

    def _footer(self, rel: str) -> _Footer:
        """The parquet footer only (its metadata and schema), not the file's data."""
        st = self.table.storage
        pf = pq.ParquetFile(st.full(rel), filesystem=st.arrow_filesystem())
        return _Footer(pf.metadata, pf.schema_arrow)

    def _indexed_columns(self) -> list[str]:
        if self._columns is None:
            self._columns = self._find_indexed_columns()
        return self._columns

    def _find_indexed_columns(self) -> list[str]:
        """The columns column_stats indexes: its index definition's source fields, else those indexed so
        far, else the table's first 32 columns (meta fields first), as Hudi picks them."""
        st = self.table.storage
        if st.exists(INDEX_DEFINITIONS):
            defs = json.loads(st.read_bytes(INDEX_DEFINITIONS)).get("indexDefinitions", {})
            fields = (defs.get(K.COLUMN_STATS) or {}).get("sourceFields")
            if fields:
                return list(fields)
        if not self.table.config.traits.indexes_in_table_config:
            # Hudi 0.x keeps the column list in the writers' config, not the table: take the indexed ones.
            seen = sorted({_payload(r, r.column_stats, "column stats")["columnName"]
                           for r in self._open_mdt.records(K.COLUMN_STATS).values()})
            if seen:
                return seen
        return [f["name"] for f in with_meta_fields(_latest_schema(self.table))["fields"]][:MAX_INDEXED_COLUMNS]

    def _partition_stats(self, touched: list[str], listing: dict[str, dict[str, int]], changes: list[_FileChange],
                         new_stats: list[MetadataRecord]) -> list[MetadataRecord]:
        """Tight partition statistics of each touched partition over the files it holds after the action."""
        existing = self._open_mdt.records(K.COLUMN_STATS)
        by_key = {r.key: r for r in new_stats}
        out = []
        for part in touched:
            files = dict(listing.get(part, {}))
            for c in changes:
                if c.partition == part:
                    files.update(c.added)
                    for n in c.deleted:
                        files.pop(n, None)
            per_column: dict[str, dict[str, Any]] = {}
            for name in files:
                for col in self._indexed_columns():
                    key = K.column_stats_key(part, name, col)
                    rec = by_key.get(key) or existing.get(key)
                    cs = rec.column_stats if rec is not None else None
                    if cs is None or cs.get("isDeleted"):
                        continue
                    prev = per_column.get(col)
                    per_column[col] = dict(cs) if prev is None else merge_column_stats(prev, cs)
            for col, cs in sorted(per_column.items()):
                cs = dict(cs, fileName=K.partition_identifier(part), isTightBound=True, isDeleted=False)
                out.append(column_stats_record(K.partition_stats_key(part, col), cs, partition_stats=True))
        return out

    # --- writing ----------------------------------------------------------------------------------
    def _write_delta_commit(self, instant: str, records: dict[str, list[MetadataRecord]],
                            deletes: dict[str, list[str]] | None = None) -> None:
        tl = self._open_mdt.table.timeline
        requested = tl.create_requested(Action.DELTA_COMMIT, b"", timestamp=instant)
        inflight = tl.transition_to_inflight(requested, b"")
        by_partition: dict[str, list[WriteStat]] = defaultdict(list)
        deletes = deletes or {}
        for mdt_partition in sorted(set(records) | set(deletes)):
            recs, gone = records.get(mdt_partition, []), deletes.get(mdt_partition, [])
            if not recs and not gone:
                continue
            slices = self._open_mdt.file_slices(mdt_partition)
            if not slices:
                raise HudiError(f"metadata table partition {mdt_partition} has no file groups")
            groups: dict[int, dict[str, MetadataRecord]] = defaultdict(dict)
            for rec in recs:
                bucket = groups[K.file_group_index(rec.key, len(slices))]
                # Two records of one key in one commit fold as a reader would fold them.
                bucket[rec.key] = rec if rec.key not in bucket else _fold(bucket[rec.key], rec)
            deleted: dict[int, list[str]] = defaultdict(list)
            for key in gone:
                deleted[K.file_group_index(key, len(slices))].append(key)
            for index in sorted(set(groups) | set(deleted)):
                fs, bucket = slices[index], groups.get(index, {})
                blocks = []
                if bucket:
                    entries = [(k, encode_record(r, self.schema, blank_key=True)) for k, r in bucket.items()]
                    hfile = write_hfile(entries, file_info={"schema": self.schema.encode()})
                    blocks.append(_block_bytes(BlockType.HFILE_DATA,
                                               {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: self.schema}, hfile))
                if deleted.get(index):
                    blocks.append(delete_block([(k, "", None) for k in sorted(deleted[index])], instant, "int"))
                data = b"".join(blocks)
                rel = self._new_log_file(mdt_partition, fs, instant, index, data)
                log_name = LogFileName.parse(rel)
                if log_name is None:
                    raise HudiError(f"MDT log file {rel} written under a name that is not a log file's")
                by_partition[mdt_partition].append(WriteStat(
                    file_id=fs.file_id, path=rel, prev_commit=fs.base_instant, num_writes=len(bucket),
                    num_update_writes=len(bucket), num_deletes=len(deleted.get(index, ())),
                    total_write_bytes=len(data), partition_path=mdt_partition,
                    total_log_blocks=len(blocks), file_size_in_bytes=len(data),
                    log_version=log_name.version, log_offset=0,
                    base_file=fs.base_file.path.rsplit("/", 1)[-1] if fs.base_file else "",
                    log_files=[posixpath.basename(rel)]))
        meta = CommitMetadata(partition_to_write_stats=dict(by_partition), extra_metadata={"schema": self.schema},
                              operation_type="UPSERT_PREPPED")
        tl.complete(inflight, serialize_commit_metadata(meta, self._open_mdt.table.config.version))
        self.mdt = MetadataTable(self.table)   # the state changed: read it afresh next time

    def _new_log_file(self, mdt_partition: str, fs: FileSlice, instant: str, index: int, block: bytes) -> str:
        """A new log file of the file group holding one block: named by the delta commit (v8+) or the
        slice's base instant with the next version (v6)."""
        st = self._open_mdt.table.storage
        token = write_token(index)
        if self._open_mdt.table.config.traits.log_files_named_by_writer:
            name = LogFileName(fs.file_id, instant, 1, token)
        else:
            versions = [n.version for n in (LogFileName.parse(i.name) for i in st.listdir(mdt_partition))
                        if n and n.file_id == fs.file_id and n.instant == fs.base_instant]
            name = LogFileName(fs.file_id, fs.base_instant, max(versions, default=0) + 1, token)
        rel = posixpath.join(mdt_partition, str(name))
        st.write_new(rel, block)
        return rel

    def _roll_back_delta_commit(self, instant: str, rollback_instant: str | None = None) -> None:
        """Roll back the MDT delta commit at `instant`, if the MDT has one (or finish the MDT rollback of it
        an earlier run left pending): a `rollback` instant at `rollback_instant` (a fresh instant time if
        None) on the MDT timeline, executed and completed as Java's MDT write client does it."""
        mdt = self._open_mdt
        tl, st = mdt.table.timeline, mdt.table.storage
        tl.reload(force=True)
        states = {s: i for s, i in tl.states_of(instant).items() if i.action == Action.DELTA_COMMIT}
        pending = self._pending_rollback_of(instant)
        if pending is None:
            if not states:
                return
            plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=instant, action=Action.DELTA_COMMIT),
                                rollback_requests=self._rollback_requests(instant))
            pending = tl.create_requested(Action.ROLLBACK, serialize_rollback_plan(plan), timestamp=rollback_instant)
        else:
            plan = parse_rollback_plan(tl.read_plan(pending.timestamp))
        started = clock.monotonic()
        if pending.state is State.REQUESTED:
            pending = tl.transition_to_inflight(pending, b"")
        # Readers stop reading the delta commit before its blocks go: its completed file first.
        if State.COMPLETED in states:
            st.delete(tl.path_of(states[State.COMPLETED]))
        by_partition: dict[str, RollbackPartitionMetadata] = {}
        for request in plan.rollback_requests:
            part = request.partition_path or ""
            meta = by_partition.setdefault(part, RollbackPartitionMetadata(partition_path=part))
            for path in request.files_to_be_deleted:
                st.delete(table_relative(st.base_uri, path, part))
                meta.success_delete_files.append(path)
            for path, size in request.log_blocks_to_be_deleted.items():
                rel = table_relative(st.base_uri, path, part)
                marked = self._rollback_block_of(rel, instant, pending.timestamp) or write_rollback_block_file(
                    st, rel, instant, pending.timestamp, write_token())
                meta.rollback_log_files[st.uri(marked)] = st.info(marked).size
                meta.log_files_from_failed_commit[path] = size
        for state in (State.INFLIGHT, State.REQUESTED):
            if state in states:
                st.delete(tl.path_of(states[state]))
        metadata = RollbackMetadata(
            start_rollback_time=pending.timestamp, time_taken_in_millis=int((clock.monotonic() - started) * 1000),
            total_files_deleted=sum(len(m.success_delete_files) for m in by_partition.values()),
            commits_rollback=[instant], partition_metadata=by_partition,
            instants_rollback=[InstantInfo(commit_time=instant, action=Action.DELTA_COMMIT)])
        tl.complete(pending, serialize_rollback_metadata(metadata))
        tl.reload(force=True, full=True)
        self.mdt = MetadataTable(self.table)

    def _pending_rollback_of(self, instant: str) -> Instant | None:
        tl = self._open_mdt.table.timeline
        for pending in tl.pending([Action.ROLLBACK]):
            target = parse_rollback_plan(tl.read_plan(pending.timestamp)).instant_to_rollback
            if target is not None and target.commit_time == instant:
                return pending
        return None

    def _rollback_requests(self, instant: str) -> list[RollbackRequest]:
        """What rolling back the delta commit `instant` undoes in each MDT file group: its own log files
        (v8+ names them by it; on v6, those holding no other block) are deleted, a log file it shares with
        other blocks has them marked."""
        mdt = self._open_mdt
        st = mdt.table.storage
        v6 = not mdt.table.config.traits.log_files_named_by_writer
        requests = []
        for part in mdt.partitions:
            for info in sorted(st.listdir(part), key=lambda i: i.name):
                name = LogFileName.parse(info.name)
                if name is None:
                    continue
                if not v6:
                    if name.instant == instant:
                        requests.append(RollbackRequest(partition_path=part, file_id=name.file_id,
                                                        latest_base_instant=name.instant,
                                                        files_to_be_deleted=[st.uri(info.path)]))
                    continue
                instants = {b.instant_time for b in read_log_file(st.read_bytes(info.path))
                            if b.block_type is not BlockType.COMMAND}
                if instant not in instants:
                    continue
                request = RollbackRequest(partition_path=part, file_id=name.file_id, latest_base_instant=name.instant)
                if instants == {instant}:
                    request.files_to_be_deleted = [st.uri(info.path)]
                else:
                    request.log_blocks_to_be_deleted = {st.uri(info.path): info.size}
                requests.append(request)
        return requests

    def _rollback_block_of(self, log_rel: str, target: str, rollback_instant: str) -> str | None:
        """The command-block file an earlier run of the rollback `rollback_instant` wrote in `log_rel`'s
        series, if any (a re-run must not mark the blocks twice)."""
        st = self._open_mdt.table.storage
        name = LogFileName.parse(log_rel)
        folder = posixpath.dirname(log_rel)
        for info in st.listdir(folder):
            other = LogFileName.parse(info.name)
            if other is None or name is None or (other.file_id, other.instant) != (name.file_id, name.instant):
                continue
            if other.version <= name.version:
                continue
            for b in read_log_file(st.read_bytes(info.path)):
                if (b.block_type is BlockType.COMMAND and b.is_rollback and b.target_instant_time == target
                        and b.instant_time == rollback_instant):
                    return info.path
        return None


def _dropped_records(metadata: CommitMetadata) -> bool:
    """Whether a compaction may have dropped records: those its record TTL expired."""
    return TTL_CUTOFF_KEY in (metadata.extra_metadata or {})


def _latest_schema(table: HudiTable) -> dict[str, Any]:
    tl = table.timeline
    for inst in reversed(tl.completed_writes()):
        schema = tl.commit_metadata(inst).schema()
        if schema:
            return schema
    if table.config.create_schema:
        create_schema: dict[str, Any] = json.loads(table.config.create_schema)
        return create_schema
    raise HudiError(f"table {table.config.name} records no schema")


def _fold(older: MetadataRecord, newer: MetadataRecord) -> MetadataRecord:
    return merge(older, newer)


def _payload(rec: MetadataRecord, payload: dict[str, Any] | None, what: str) -> dict[str, Any]:
    """`payload` (a typed view of `rec`), which a live record of its MDT partition always has."""
    if payload is None:
        raise HudiError(f"MDT record {rec.key!r} ({rec.type.name}) has no {what}")
    return payload


def write_metadata_commit(table: HudiTable, instant: str, action: str,
                          metadata: CommitMetadata | CleanMetadata) -> None:
    """The executors' hook: the MDT delta commit of `instant`, if the table has an MDT (else nothing)."""
    MetadataWriter(table).commit(instant, action, metadata)


def write_metadata_rollback(table: HudiTable, instant: str, failed_instant: str, metadata: RollbackMetadata) -> None:
    MetadataWriter(table).rollback(instant, failed_instant, metadata)
