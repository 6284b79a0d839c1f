"""The state of a table's metadata table (MDT): each MDT partition's latest file slices (base HFile +
log files), their records merged as Hudi merges them, and the data table's file listing it gives."""
from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from ..config import table as table_config
from ..errors import HudiError
from ..fs_view.view import FileSlice, FileSystemView
from ..log_format.hfile import read_hfile
from ..log_format.log_file import BlockType, HeaderKey, LogBlock, read_log_file
from ..storage.table_storage import FileInfo
from ..table.hudi_table import PROPERTIES, HudiTable
from ..table.properties import parse_properties
from ..timeline.instant import Action
from .keys import ALL_PARTITIONS_KEY, METADATA_DIR, data_partition_path
from .records import MetadataRecord, RecordType, decode_value, merge

PARTITIONS_PROP = table_config.METADATA_PARTITIONS.key
PARTITIONS_INFLIGHT_PROP = table_config.METADATA_PARTITIONS_INFLIGHT.key
# MDT instants that belong to the MDT itself, not to a data-table instant: the initialisation of each
# partition (`00000000000000000`, `...0001`, ...: SOLO_COMMIT_TIMESTAMP and its successors).
_MDT_OWN_PREFIX = "0000000000000"
HFILE_EXT = ".hfile"


def metadata_partitions(data: HudiTable) -> list[str]:
    """The MDT partitions the data table says are built (`hoodie.table.metadata.partitions`)."""
    return list(table_config.METADATA_PARTITIONS.value(data.config.props))


def inflight_metadata_partitions(data: HudiTable) -> list[str]:
    return list(table_config.METADATA_PARTITIONS_INFLIGHT.value(data.config.props))


def refresh_metadata_partitions(data: HudiTable) -> None:
    """Re-read the two partition lists of `data`'s hoodie.properties from storage into its config."""
    props = parse_properties(data.storage.read_bytes(PROPERTIES).decode("utf-8"))
    for prop in (PARTITIONS_PROP, PARTITIONS_INFLIGHT_PROP):
        if prop in props:
            data.config.props[prop] = props[prop]
        else:
            data.config.props.pop(prop, None)


class _MetadataFileSystemView(FileSystemView):
    """The MDT's file groups: its partitions are the folders under .hoodie/metadata, not key-generator
    levels, and its base files are HFiles."""

    @cached_property
    def partitions(self) -> list[str]:
        return sorted(i.name for i in self.table.storage.listdir("")
                      if i.is_dir and not i.name.startswith("."))

    def _list_partition(self, partition: str) -> list[FileInfo]:
        # The view parses base file names as `.parquet`; an HFile base file is named alike otherwise.
        # Only the name is rewritten: the slice keeps the file's real path.
        return [replace(i, name=i.name[:-len(HFILE_EXT)] + ".parquet") if i.name.endswith(HFILE_EXT) else i
                for i in super()._list_partition(partition)]


@dataclass
class KeyChange:
    """What a slice's log blocks did to one key, in order: whether the base file's record was dropped first (a
    delete), and the records written after that."""
    drops_base: bool = False
    records: list[MetadataRecord] = field(default_factory=list)

    def over(self, base: MetadataRecord | None) -> MetadataRecord | None:
        """The key's record after this change, from the base file's (None: it has none); None if deleted."""
        out = None if self.drops_base else base
        for rec in self.records:
            out = rec if out is None else merge(out, rec)
        return out


class MetadataTable:
    def __init__(self, data: HudiTable):
        self.data = data
        self.table = HudiTable.load(posixpath.join(data.base_path, METADATA_DIR), context=data.context)
        self._records: dict[str, dict[str, MetadataRecord]] = {}

    @classmethod
    def open(cls, data: HudiTable) -> MetadataTable | None:
        """The table's MDT, or None if it has none."""
        if not data.storage.exists(posixpath.join(METADATA_DIR, ".hoodie/hoodie.properties")):
            return None
        return cls(data)

    @cached_property
    def view(self) -> FileSystemView:
        return _MetadataFileSystemView(self.table)

    @property
    def partitions(self) -> list[str]:
        return self.view.partitions

    def file_slices(self, partition: str) -> list[FileSlice]:
        return sorted((fs for fs in self.view.merged_latest_slices() if fs.partition == partition),
                      key=lambda fs: fs.file_id)

    # --- which MDT instants count -------------------------------------------------------------------
    def is_valid_instant(self, ts: str) -> bool:
        return self.valid_instants()(ts)

    def valid_instants(self) -> Callable[[str], bool]:
        """Whether an MDT delta commit counts: completed on the MDT, and its data-table instant committed too
        (a data instant that failed after its MDT commit must not show), as Hudi's `getValidInstantTimestamps`
        says; the MDT's own initialisation instants count as they are. The data table's start is taken once."""
        committed = self.data.timeline.committed_rule()  # completed there, or archived

        def valid(ts: str) -> bool:
            if not self.table.timeline.is_completed(ts):
                return False
            if ts.startswith(_MDT_OWN_PREFIX) or committed(ts):
                return True
            # The delta commit initialising a partition an `indexing` instant builds has that instant's time
            # (Hudi's isIndexingCommit: the data table has the indexing instant, in any state).
            return any(i.action == Action.INDEXING for i in self.data.timeline.states_of(ts).values())
        return valid

    # --- records ------------------------------------------------------------------------------------
    def records(self, partition: str) -> dict[str, MetadataRecord]:
        """Every live record of an MDT partition, merged: key -> record (tombstones of whole records
        and deleted keys left out; file-listing tombstones are kept inside their record)."""
        if partition not in self._records:
            merged: dict[str, MetadataRecord] = {}
            for fs in self.file_slices(partition):
                merged.update(self.slice_records(fs))
            self._records[partition] = {k: r for k, r in merged.items() if not r.is_deleted}
        return self._records[partition]

    def slice_records(self, fs: FileSlice) -> dict[str, MetadataRecord]:
        """Every record of the slice `fs`, its base file's and log blocks' merged (deleted ones left out)."""
        out = self.base_records(fs)
        for key, change in self.log_changes(fs).items():
            rec = change.over(out.get(key))
            if rec is None:
                out.pop(key, None)
            else:
                out[key] = rec
        return out

    def base_records(self, fs: FileSlice) -> dict[str, MetadataRecord]:
        if fs.base_file is None:
            return {}
        h = read_hfile(self.table.storage.read_bytes(fs.base_file.path))
        schema = h.file_info["schema"].decode()
        return {key: decode_value(value, key, schema) for key, value in h.items()}

    def log_changes(self, fs: FileSlice) -> dict[str, KeyChange]:
        """What the log blocks of `fs` whose instants count did to each key they name, in order."""
        blocks: list[LogBlock] = []
        for lf in fs.log_files:
            for b in read_log_file(self.table.storage.read_bytes(lf.path)):
                if b.block_type is BlockType.COMMAND and b.is_rollback:
                    # As Java's log scanner: the target's blocks read so far are skipped; a later block of
                    # the same instant time (a retried delta commit's) counts.
                    blocks = [x for x in blocks if x.instant_time != b.target_instant_time]
                elif b.block_type in (BlockType.HFILE_DATA, BlockType.DELETE):
                    blocks.append(b)
        valid = self.valid_instants()
        changes: dict[str, KeyChange] = {}
        for b in blocks:
            # A block without an instant time is never valid (no completed instant has none).
            instant = b.instant_time
            if instant is None or not valid(instant):
                continue
            if b.block_type is BlockType.DELETE:
                for key, _partition, _ord in b.deleted_keys():
                    changes[key] = KeyChange(drops_base=True)
                continue
            schema = b.header[HeaderKey.SCHEMA]
            for key, value in read_hfile(b.content()).items():
                changes.setdefault(key, KeyChange()).records.append(decode_value(value, key, schema))
        return changes

    # --- the files partition ------------------------------------------------------------------------
    def all_partitions(self) -> list[str]:
        """The data table's partition paths the MDT lists ('' for a non-partitioned table)."""
        rec = self.records("files").get(ALL_PARTITIONS_KEY)
        if rec is None:
            return []
        return sorted(data_partition_path(name) for name, e in rec.files.items() if not e.is_deleted)

    def file_listing(self) -> dict[str, dict[str, int]]:
        """Data partition path -> {file name: size} of the files the MDT lists."""
        recs = self.records("files")
        out = {}
        for part in self.all_partitions():
            rec = recs.get(part or ".")
            if rec is not None and rec.type != RecordType.FILE_LIST:
                raise HudiError(f"MDT files record {part!r} has type {rec.type}, not a file list")
            out[part] = {name: e.size for name, e in (rec.files.items() if rec else ()) if not e.is_deleted}
        return out
