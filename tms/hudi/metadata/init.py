"""Creating the metadata table (MDT) of a new, empty table, laid out as Hudi 1.x initialises one: a MERGE_ON_READ
table under `.hoodie/metadata` with HFile base files, one initialising delta commit, and for each MDT
partition its file groups (`files-0000-0`, `col-stats-0000-0`, ...) each with a base HFile; then the data
table's `hoodie.table.metadata.partitions` lists the partitions."""
from __future__ import annotations

import posixpath
from collections.abc import Callable

from ..errors import HudiError, UnsupportedTableError
from ..fs_view.file_names import write_token
from ..log_format.hfile import write_hfile
from ..table.hudi_table import PROPERTIES, HudiTable
from ..table.properties import format_properties, table_checksum
from ..table.version_traits import TableVersionTraits
from ..timeline.instant import Action
from ..timeline.serde import CommitMetadata, WriteStat, serialize_commit_metadata
from . import keys as K
from .avro_schema import schema_text
from .reader import PARTITIONS_INFLIGHT_PROP, PARTITIONS_PROP
from .records import MetadataRecord, encode_record, files_record

# File groups per MDT partition: Hudi's defaults (hoodie.metadata.index.column.stats.file.group.count,
# hoodie.metadata.record.index.min.filegroup.count, hoodie.metadata.index.bloom.filter.file.group.count).
FILE_GROUPS = {K.FILES: 1, K.COLUMN_STATS: 2, K.PARTITION_STATS: 1, K.RECORD_INDEX: 10, K.BLOOM_FILTERS: 4}
CREATABLE = tuple(FILE_GROUPS)


def init_instant(version: int) -> str:
    """Hudi's instant initialising the MDT: SOLO_COMMIT_TIMESTAMP with the partition-initialisation suffix
    010 in Hudi 0.14/0.15 (table version 6), 00000000000000000 in Hudi 1.x."""
    return "00000000000000000" if TableVersionTraits(version).is_hudi_1 else "00000000000000" + "010"


def metadata_table_properties(data: HudiTable) -> dict[str, str]:
    version = data.config.version
    name = f"{data.config.name}_metadata"
    props = {
        "hoodie.table.name": name,
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": str(version),
        "hoodie.table.recordkey.fields": "key",
        "hoodie.table.base.file.format": "HFILE",
        "hoodie.populate.meta.fields": "false",
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.checksum": str(table_checksum("", name)),
    }
    if data.config.traits.is_hudi_1:
        props.update({
            "hoodie.table.initial.version": str(version),
            "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
            "hoodie.archivelog.folder": "history",
            "hoodie.timeline.layout.version": "2",
            "hoodie.timeline.history.path": "history",
            "hoodie.timeline.path": "timeline",
            "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
            "hoodie.record.merge.mode": "CUSTOM",
        })
    else:
        props.update({
            "hoodie.table.keygenerator.class": "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
            "hoodie.archivelog.folder": "archived",
            "hoodie.timeline.layout.version": "1",
        })
    return props


def write_file_groups(mdt: HudiTable, part: str, instant: str, records: list[MetadataRecord], schema: str,
                      groups: int | None = None, route: Callable[[str, int], int] = K.file_group_index
                      ) -> list[WriteStat]:
    """The MDT partition `part`'s file groups (`groups`, by default FILE_GROUPS[part], of them), each a base
    HFile written at `instant` holding the records `route` maps to it; their write stats."""
    marker = posixpath.join(part, ".hoodie_partition_metadata")
    mdt.storage.write_atomic(marker, f"#partition metadata\ncommitTime={instant}\npartitionDepth=1\n".encode(),
                             overwrite=True)
    groups = groups or FILE_GROUPS[part]
    by_group: list[dict[str, MetadataRecord]] = [{} for _ in range(groups)]
    for rec in records:
        by_group[route(rec.key, groups)][rec.key] = rec
    stats = []
    for index in range(groups):
        fid = K.file_group_id(part, index)
        entries = [(key, encode_record(rec, schema, blank_key=False)) for key, rec in sorted(by_group[index].items())]
        raw = write_hfile(entries, file_info={"schema": schema.encode()})
        rel = posixpath.join(part, f"{fid}_{write_token(index)}_{instant}.hfile")
        mdt.storage.write_new(rel, raw)
        stats.append(WriteStat(
            file_id=fid, path=rel, prev_commit="null", num_writes=len(entries), num_inserts=len(entries),
            total_write_bytes=len(raw), partition_path=part, file_size_in_bytes=len(raw)))
    return stats


def create_metadata_table(data: HudiTable, partitions: list[str]) -> None:
    """Initialise the MDT of `data` (which must have no completed instant yet) with `partitions`."""
    partitions = sorted(set(partitions))
    unknown = [p for p in partitions if p not in CREATABLE]
    if unknown:
        raise UnsupportedTableError(f"TMS cannot create metadata partition(s) {', '.join(unknown)} "
                                    f"(it creates {', '.join(CREATABLE)})")
    if K.FILES not in partitions:
        raise HudiError("a metadata table needs the files partition")
    if data.timeline.completed():
        raise HudiError(f"table {data.config.name} has completed instants: TMS initialises a metadata table "
                        "only on a new table")
    base = posixpath.join(data.base_path, K.METADATA_DIR)
    mdt = HudiTable.create(base, metadata_table_properties(data), context=data.context)
    version = data.config.version
    schema = schema_text(data.config.traits)
    instant = init_instant(version)
    tl = mdt.timeline
    inflight = tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT, b"", timestamp=instant), b"")
    stats: dict[str, list[WriteStat]] = {}
    for part in partitions:
        records = [files_record(K.ALL_PARTITIONS_KEY, {}, all_partitions=True)] if part == K.FILES else []
        stats[part] = write_file_groups(mdt, part, instant, records, schema)
    meta = CommitMetadata(partition_to_write_stats=stats, extra_metadata={"schema": schema},
                          operation_type="BULK_INSERT")
    tl.complete(inflight, serialize_commit_metadata(meta, version))
    data.config.props[PARTITIONS_PROP] = ",".join(partitions)
    if data.config.traits.is_hudi_1:
        data.config.props[PARTITIONS_INFLIGHT_PROP] = ""
    data.storage.write_atomic(PROPERTIES, format_properties(data.config.props, "Properties saved by TMS").encode(),
                              overwrite=True)
