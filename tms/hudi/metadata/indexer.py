"""Building a metadata-table (MDT) partition of an existing table, and dropping one, as Hudi's `indexing`
action does (`ScheduleIndexActionExecutor`, `RunIndexActionExecutor`, `HoodieTable.dropIndex`):

- schedule: `<I>.indexing.requested` holds a HoodieIndexPlan (the partition, and the data instant it is built
  up to); hoodie.properties' `hoodie.table.metadata.partitions.inflight` gains the partition.
- run: `<I>.indexing.inflight`; the partition's records are built from the table's files as they are (no
  lock: writers go on committing); then, under the table's lock, the build catches up with what the instants
  that completed meanwhile changed (files added or removed, file slices rewritten), writes the partition's
  file groups (a base HFile each) in an MDT delta commit at I (Hudi's `isIndexingCommit`: readers count it
  because the data table has the indexing instant), moves the partition to
  `hoodie.table.metadata.partitions` and completes `<I>.indexing` with a HoodieIndexCommitMetadata. Writers
  that commit after that update the partition (`MetadataWriter` re-reads the partition lists under their lock).
- drop: the partition leaves hoodie.properties, then its folder is deleted.

The catch-up compares states rather than replaying instants: each record of a partition TMS builds is a
function of one data file (files, column_stats, bloom_filters), of one partition's files (partition_stats) or
of the latest file slice of one file group (record_index, secondary_index_*), so rebuilding the records of what
differs between the first build and the state under the lock is exact.

A secondary index (`secondary_index_<name>` on one column, see `secondary`) is defined when it is scheduled, as
`CREATE INDEX ... USING secondary_index(column)` defines it before Hudi builds it: its definition joins the
index definitions file, which a drop leaves again.

Hudi 1.x tables (version 8+) with Parquet base files only: a v6 table marks indexing commits differently.
"""
from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import HudiError, UnsupportedTableError
from ..fs_view.view import FileSlice, FileSystemView
from ..locks.transaction import TransactionManager
from ..records.base_format import PARQUET, table_base_format
from ..records.merge import merge_slice
from ..records.schema_evolution import full_arrow_schema, latest_data_schema
from ..table.hudi_table import PROPERTIES, HudiTable
from ..table.properties import format_properties
from ..timeline.instant import Action, Instant, State
from ..timeline.serde import (
    CommitMetadata,
    IndexCommitMetadata,
    IndexPartitionInfo,
    IndexPlan,
    parse_index_plan,
    serialize_commit_metadata,
    serialize_index_commit_metadata,
    serialize_index_plan,
)
from . import keys as K
from .avro_schema import schema_text
from .init import metadata_table_properties, write_file_groups
from .listing import committed_files
from .reader import (
    PARTITIONS_INFLIGHT_PROP,
    PARTITIONS_PROP,
    MetadataTable,
    inflight_metadata_partitions,
    metadata_partitions,
    refresh_metadata_partitions,
)
from .records import MetadataRecord, files_record, record_index_record
from .secondary import (
    SecondaryIndex,
    define_secondary_index,
    file_group_count,
    read_index_definitions,
    secondary_index,
    supported_column_type,
    undefine_index,
)
from .writer import MetadataWriter

BUILDABLE = (K.FILES, K.COLUMN_STATS, K.BLOOM_FILTERS, K.RECORD_INDEX, K.PARTITION_STATS)
# What a partition needs built first (Hudi: every index needs `files`; partition stats derive from column stats).
_NEEDS = {K.COLUMN_STATS: K.FILES, K.BLOOM_FILTERS: K.FILES, K.RECORD_INDEX: K.FILES,
          K.PARTITION_STATS: K.COLUMN_STATS}
_MIN_VERSION = 8
_SECONDARY_INDEX_VERSIONS = (8, 9)   # the table versions whose secondary indexes TMS builds as Hudi does


@dataclass
class IndexResult:
    instant: str
    partition: str
    records: int
    caught_up: list[str] = field(default_factory=list)   # data instants completed while it built


def require_buildable(table: HudiTable, partition: str, column: str | None = None) -> None:
    """Raise UnsupportedTableError (or HudiError for a state that forbids it now), in one line, unless TMS
    can build MDT partition `partition` of `table` exactly (`column`: the column a secondary index indexes)."""
    name = table.config.name
    refresh_metadata_partitions(table)
    secondary = partition.startswith(K.SECONDARY_INDEX_PREFIX)
    if partition.startswith(K.EXPRESSION_INDEX_PREFIX):
        raise UnsupportedTableError(f"TMS does not build expression indexes ({partition}); "
                                    "build it with Hudi's own indexer")
    if secondary:
        _require_secondary_buildable(table, partition, column)
    elif column is not None:
        raise UnsupportedTableError(f"a column is given for secondary indexes only, not for {partition}")
    elif partition not in BUILDABLE:
        raise UnsupportedTableError(f"TMS cannot build metadata partition {partition!r} "
                                    f"(it builds {', '.join(BUILDABLE)})")
    if table.config.version < _MIN_VERSION:
        raise UnsupportedTableError(f"table {name} has table version {table.config.version}: TMS builds metadata "
                                    f"partitions of Hudi 1.x tables (version {_MIN_VERSION}+) only")
    if table_base_format(table.config) != PARQUET:
        raise UnsupportedTableError(f"table {name} has {table_base_format(table.config)} base files: TMS builds "
                                    "metadata partitions from Parquet base files only")
    if partition == K.RECORD_INDEX and not table.config.populate_meta_fields:
        raise UnsupportedTableError(f"table {name} has no meta fields (virtual keys): TMS cannot read its record "
                                    "keys to build the record index")
    built, inflight = metadata_partitions(table), inflight_metadata_partitions(table)
    if partition in built:
        raise HudiError(f"table {name} already has metadata partition {partition}")
    if partition in inflight:
        raise HudiError(f"metadata partition {partition} of table {name} is already being built")
    needed = K.RECORD_INDEX if secondary else _NEEDS.get(partition)
    if needed and needed not in built:
        raise UnsupportedTableError(f"metadata partition {partition} needs {needed} built first (table {name})")
    if partition == K.FILES and MetadataTable.open(table) is not None:
        raise HudiError(f"table {name} has a metadata table without a files partition: drop it first")
    pending = [i.timestamp for i in table.timeline.pending([Action.INDEXING])]
    if pending:
        raise HudiError(f"table {name} has a pending indexing instant {', '.join(pending)}")


def _require_secondary_buildable(table: HudiTable, partition: str, column: str | None) -> None:
    name = table.config.name
    if table.config.version not in _SECONDARY_INDEX_VERSIONS:
        raise UnsupportedTableError(f"table {name} has table version {table.config.version}: TMS builds secondary "
                                    "indexes of tables of version 8 and 9 only")
    if not column:
        raise UnsupportedTableError(f"secondary index {partition} needs the column it indexes")
    if partition == K.SECONDARY_INDEX_PREFIX or any(c in partition for c in "/,.$ "):
        raise UnsupportedTableError(f"{partition!r} is not a secondary index name (secondary_index_<name>)")
    if not table.config.populate_meta_fields:
        raise UnsupportedTableError(f"table {name} has no meta fields (virtual keys): TMS cannot read its record "
                                    "keys to build a secondary index")
    data_schema = latest_data_schema(table)
    fields = full_arrow_schema(data_schema) if data_schema is not None else None
    if fields is None or column not in fields.names or column.startswith("_hoodie_"):
        raise UnsupportedTableError(f"table {name} has no data column {column!r}")
    if not supported_column_type(fields.field(column).type):
        raise UnsupportedTableError(f"column {column} of table {name} is of type {fields.field(column).type}: TMS "
                                    "builds secondary indexes on string, integer and boolean columns only")
    defined = read_index_definitions(table).get(partition)
    if defined is not None and defined.get("sourceFields") != [column]:
        # The same definition, left by a schedule that crashed before its instant, is written again.
        raise HudiError(f"table {name} already defines index {partition} (on {defined.get('sourceFields')}): "
                        "drop it first")


def schedule_index(table: HudiTable, partition: str, transactions: TransactionManager | None = None,
                   column: str | None = None) -> str:
    """Plan building `partition` (a secondary index: on `column`): the requested indexing instant (its time is
    returned)."""
    transactions = transactions or TransactionManager.single_writer(table)
    with transactions.transaction() as tl:
        tl.reload(force=True)
        require_buildable(table, partition, column)
        if column is not None:
            define_secondary_index(table, partition, column)
        last = tl.last_completed()
        plan = IndexPlan(index_partition_infos=[IndexPartitionInfo(
            metadata_partition_path=partition, index_upto_instant=last.timestamp if last else None)])
        requested = tl.create_requested(Action.INDEXING, serialize_index_plan(plan))
        _save_partitions(table, inflight_add=[partition])
    return requested.timestamp


def run_index(table: HudiTable, instant: str, transactions: TransactionManager | None = None,
              fence: Callable[[], None] = lambda: None) -> IndexResult:
    """Execute the indexing instant `instant` (requested, or inflight after a crashed run) to completion.
    `fence` is called before each change of the timeline (it raises when this run lost its task)."""
    transactions = transactions or TransactionManager.single_writer(table)
    tl = table.timeline
    tl.reload(force=True)
    states = {s: i for s, i in tl.states_of(instant).items() if i.action == Action.INDEXING}
    if State.COMPLETED in states:
        raise HudiError(f"indexing instant {instant} of table {table.config.name} is already completed")
    if not states:
        raise HudiError(f"table {table.config.name} has no indexing instant {instant}")
    plan = parse_index_plan(tl.read_plan(instant))
    if len(plan.index_partition_infos) != 1 or not plan.index_partition_infos[0].metadata_partition_path:
        raise UnsupportedTableError(f"indexing instant {instant}: TMS runs plans of exactly one partition")
    partition = plan.index_partition_infos[0].metadata_partition_path
    fence()
    inflight = states.get(State.INFLIGHT) or tl.transition_to_inflight(states[State.REQUESTED], b"")
    if State.INFLIGHT in states:   # a crashed run's: the partition is built anew (writers skip it meanwhile)
        with transactions.transaction():
            _save_partitions(table, built_remove=[partition], inflight_add=[partition])
            _discard_partial_build(table, partition, instant)

    # The first build, from the table as it is now; writers go on committing.
    build = _Build(table, partition, instant)
    first = build.state()
    records = build.records(first, {})
    with transactions.transaction() as tl:
        fence()
        tl.reload(force=True)
        done_before = {i.timestamp for i in first.completed}
        now = build.state()
        caught_up = [i.timestamp for i in now.completed if i.timestamp not in done_before]
        records = build.records(now, records)
        out = [r for per_unit in records.values() for r in per_unit]
        if partition == K.PARTITION_STATS:
            out = build.partition_stats(now, out)
        _write_partition(table, partition, instant, out, build.secondary)
        upto = caught_up[-1] if caught_up else plan.index_partition_infos[0].index_upto_instant
        _save_partitions(table, inflight_remove=[partition], built_add=[partition])
        meta = IndexCommitMetadata(index_partition_infos=[IndexPartitionInfo(
            metadata_partition_path=partition, index_upto_instant=upto)])
        tl.complete(inflight, serialize_index_commit_metadata(meta))
    return IndexResult(instant, partition, len(out), caught_up)


def build_index(table: HudiTable, partition: str, transactions: TransactionManager | None = None,
                column: str | None = None) -> IndexResult:
    """Schedule and run the build of `partition` (a secondary index: on `column`)."""
    return run_index(table, schedule_index(table, partition, transactions, column), transactions)


def drop_index(table: HudiTable, partition: str, transactions: TransactionManager | None = None) -> None:
    """Drop MDT partition `partition`: out of hoodie.properties first (writers stop updating it), then its
    folder. Dropping `files` drops the whole metadata table, and is refused while another partition is built."""
    transactions = transactions or TransactionManager.single_writer(table)
    name = table.config.name
    with transactions.transaction() as tl:
        tl.reload(force=True)
        refresh_metadata_partitions(table)
        built, inflight = metadata_partitions(table), inflight_metadata_partitions(table)
        pending = [i.timestamp for i in tl.pending([Action.INDEXING])]
        if partition in inflight or pending:
            raise HudiError(f"table {name} has a pending indexing instant {', '.join(pending)}: "
                            "drop once it has completed")
        if partition not in built and partition in read_index_definitions(table):
            undefine_index(table, partition)   # defined, never built: a crashed schedule's or a failed CREATE INDEX
            return
        if partition not in built:
            raise HudiError(f"table {name} has no metadata partition {partition}")
        if partition == K.FILES and len(built) > 1:
            raise HudiError(f"table {name}: the files partition carries the metadata table; drop "
                            f"{', '.join(p for p in built if p != K.FILES)} first")
        _save_partitions(table, built_remove=[partition])
        undefine_index(table, partition)
        if partition == K.FILES:
            table.storage.delete_tree(K.METADATA_DIR)
        else:
            table.storage.delete_tree(posixpath.join(K.METADATA_DIR, partition))


# --- building ---------------------------------------------------------------------------------------------

@dataclass
class _State:
    completed: list[Instant]
    listing: dict[str, dict[str, int]]            # data partition -> {file name: size}
    slices: dict[tuple[str, str], FileSlice]     # record_index: (partition, file id) -> latest slice
    slice_ids: dict[tuple[str, str], tuple[object, ...]]


# A unit is what one group of records derives from: a data file (partition, name), a file group
# (partition, file id), or the table's partition list (files).
_Unit = tuple[str, str]


class _Build:
    def __init__(self, table: HudiTable, partition: str, instant: str):
        self.table, self.partition, self.instant = table, partition, instant
        self._units: dict[_Unit, object] = {}   # the identity of each unit at the last build
        self._view: FileSystemView | None = None
        self.secondary = secondary_index(table, partition) if partition.startswith(K.SECONDARY_INDEX_PREFIX) else None
        # Partitions whose records derive from the latest file slice of each file group.
        self._by_slice = partition == K.RECORD_INDEX or self.secondary is not None

    def state(self) -> _State:
        table = self.table
        table.timeline.reload(force=True)
        completed = sorted(table.timeline.completed(), key=lambda i: (table.timeline.completion_time(i) or "",
                                                                       i.timestamp))
        if self.partition == K.FILES:
            listing = committed_files(table)
        else:
            mdt = MetadataTable.open(table)
            if mdt is None:
                raise HudiError(f"table {table.config.name} has no metadata table")
            listing = mdt.file_listing()
        slices: dict[tuple[str, str], FileSlice] = {}
        ids: dict[tuple[str, str], tuple[object, ...]] = {}
        if self._by_slice:
            view = table.file_system_view()
            for fs in view.merged_latest_slices():
                slices[(fs.partition, fs.file_id)] = fs
                ids[(fs.partition, fs.file_id)] = _slice_identity(view, fs)
            self._view = view
        return _State(completed, listing, slices, ids)

    def records(self, state: _State, previous: dict[_Unit, list[MetadataRecord]]
                ) -> dict[_Unit, list[MetadataRecord]]:
        """The partition's records by unit in `state`, reusing those of `previous` whose unit is unchanged."""
        if self.partition == K.FILES:
            return self._files_records(state)
        units: dict[_Unit, object]
        build: Callable[[_Unit], list[MetadataRecord]]
        if self._by_slice:
            units = dict(state.slice_ids)

            def build(unit: _Unit) -> list[MetadataRecord]:
                return self._slice_records(state.slices[unit])
        else:
            sizes = {(p, n): size for p, files in state.listing.items() for n, size in files.items()}
            units = dict(sizes)
            kind = K.COLUMN_STATS if self.partition == K.PARTITION_STATS else self.partition
            writer = MetadataWriter(self.table)

            def build(unit: _Unit) -> list[MetadataRecord]:
                return writer.file_records(kind, unit[0], {unit[1]: sizes[unit]}, self.instant)
        seen = self._units
        out = {}
        for unit, ident in units.items():
            if unit in previous and seen.get(unit) == ident:
                out[unit] = previous[unit]
            else:
                out[unit] = build(unit)
        self._units = units
        return out

    def partition_stats(self, state: _State, column_stats: list[MetadataRecord]) -> list[MetadataRecord]:
        return MetadataWriter(self.table).partition_stats(state.listing, column_stats)

    def _files_records(self, state: _State) -> dict[_Unit, list[MetadataRecord]]:
        out: dict[_Unit, list[MetadataRecord]] = {("", K.ALL_PARTITIONS_KEY): [files_record(
            K.ALL_PARTITIONS_KEY, {K.partition_identifier(p): 0 for p in state.listing}, all_partitions=True)]}
        for part, files in state.listing.items():
            out[(part, "")] = [files_record(K.partition_identifier(part), files)]
        return out

    def _slice_records(self, fs: FileSlice) -> list[MetadataRecord]:
        """The record index's or the secondary index's records of the live records of file slice `fs`."""
        table = self.table
        data_schema = latest_data_schema(table)
        schema = full_arrow_schema(data_schema) if data_schema is not None else None
        if self._view is None:
            raise HudiError("the record index is built from a file system view")
        si = self.secondary
        columns = ["_hoodie_record_key"] + ([si.column] if si else [])
        rows = merge_slice(table.storage, table.config, fs, self._view.is_completed, columns, schema)
        if si is not None:
            return si.records(rows.column(si.column).to_pylist(), rows.column("_hoodie_record_key").to_pylist())
        zone = table.config.timeline_zone
        return [record_index_record(k, fs.partition, fs.file_id, fs.base_instant, zone=zone)
                for k in rows.column("_hoodie_record_key").to_pylist()]


def _slice_identity(view: FileSystemView, fs: FileSlice) -> tuple[object, ...]:
    """What a file slice's live records depend on: its files, and which of its log files' instants count."""
    return (fs.base_file.path if fs.base_file else None,
            tuple((lf.path, lf.size, view.is_completed(lf.name.instant)) for lf in fs.log_files))


# --- writing ----------------------------------------------------------------------------------------------

def _write_partition(table: HudiTable, partition: str, instant: str, records: list[MetadataRecord],
                     secondary: SecondaryIndex | None = None) -> None:
    """The partition's file groups in an MDT delta commit at the indexing instant `instant` (a secondary index's
    as many as Hudi estimates for its records, each holding the keys it routes to it)."""
    mdt_path = posixpath.join(table.base_path, K.METADATA_DIR)
    if partition == K.FILES and MetadataTable.open(table) is None:
        mdt = HudiTable.create(mdt_path, metadata_table_properties(table), context=table.context)
    else:
        mdt = HudiTable.load(mdt_path, context=table.context)
    schema = schema_text(table.config.traits)
    tl = mdt.timeline
    inflight = tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT, b"", timestamp=instant), b"")
    if secondary is not None:
        stats = write_file_groups(mdt, partition, instant, records, schema, file_group_count(len(records)),
                                  secondary.file_group)
    else:
        stats = write_file_groups(mdt, partition, instant, records, schema)
    meta = CommitMetadata(partition_to_write_stats={partition: stats}, extra_metadata={"schema": schema},
                          operation_type="BULK_INSERT")
    tl.complete(inflight, serialize_commit_metadata(meta, mdt.config.version))


def _discard_partial_build(table: HudiTable, partition: str, instant: str) -> None:
    """What a crashed run of `instant` left: the partition's folder and the MDT delta commit at `instant`."""
    if MetadataTable.open(table) is None:
        return
    if partition == K.FILES:
        table.storage.delete_tree(K.METADATA_DIR)
        return
    table.storage.delete_tree(posixpath.join(K.METADATA_DIR, partition))
    mdt = HudiTable.load(posixpath.join(table.base_path, K.METADATA_DIR), context=table.context)
    for inst in mdt.timeline.states_of(instant).values():
        mdt.storage.delete(mdt.timeline.path_of(inst))


def _save_partitions(table: HudiTable, *, inflight_add: Sequence[str] = (), inflight_remove: Sequence[str] = (),
                     built_add: Sequence[str] = (), built_remove: Sequence[str] = ()) -> None:
    """Update the two partition lists of hoodie.properties (read afresh: another process may have changed it)."""
    refresh_metadata_partitions(table)
    built = [p for p in metadata_partitions(table) if p not in built_remove] + \
        [p for p in built_add if p not in metadata_partitions(table)]
    inflight = [p for p in inflight_metadata_partitions(table) if p not in inflight_remove] + \
        [p for p in inflight_add if p not in inflight_metadata_partitions(table)]
    props = table.config.props
    props[PARTITIONS_PROP] = ",".join(sorted(built))
    props[PARTITIONS_INFLIGHT_PROP] = ",".join(sorted(inflight))
    table.storage.write_atomic(PROPERTIES, format_properties(props, "Properties saved by TMS").encode(),
                               overwrite=True)
