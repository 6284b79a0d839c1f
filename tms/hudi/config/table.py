"""The options of a table's `hoodie.properties` the library reads (hudi-rs: `HudiTableConfig`)."""
from __future__ import annotations

from .option import HudiOption, field_list, is_true, optional_text, text

# Required: hoodie.properties without them is no table (TableConfig.validate).
TABLE_NAME: HudiOption[str | None] = HudiOption("hoodie.table.name", None, optional_text)
TABLE_TYPE: HudiOption[str | None] = HudiOption("hoodie.table.type", None, optional_text)
TABLE_VERSION: HudiOption[str | None] = HudiOption("hoodie.table.version", None, optional_text)
REQUIRED = (TABLE_NAME, TABLE_TYPE, TABLE_VERSION)

DATABASE_NAME: HudiOption[str] = HudiOption("hoodie.database.name", "default", text)
BASE_FILE_FORMAT: HudiOption[str] = HudiOption("hoodie.table.base.file.format", "PARQUET", text)
# Folders under .hoodie: a blank value is a folder name too (as Hudi reads it).
TIMELINE_PATH: HudiOption[str] = HudiOption("hoodie.timeline.path", "timeline", text, blank_is_unset=False)
ARCHIVELOG_FOLDER: HudiOption[str] = HudiOption("hoodie.archivelog.folder", "archived", text,
                                                blank_is_unset=False)
RECORD_KEY_FIELDS: HudiOption[tuple[str, ...]] = HudiOption("hoodie.table.recordkey.fields", (), field_list)
# v8 may suffix fields with the key-generator part type, e.g. "city:SIMPLE" (TableConfig strips it).
PARTITION_FIELDS: HudiOption[tuple[str, ...]] = HudiOption("hoodie.table.partition.fields", (), field_list)
# Version 9 names the ordering fields; earlier versions the precombine field.
ORDERING_FIELDS: HudiOption[tuple[str, ...]] = HudiOption(
    "hoodie.table.ordering.fields", (), field_list, aliases=("hoodie.table.precombine.field",))
HIVE_STYLE_PARTITIONING: HudiOption[bool] = HudiOption(
    "hoodie.datasource.write.hive_style_partitioning", False, is_true, blank_is_unset=False)
POPULATE_META_FIELDS: HudiOption[bool] = HudiOption("hoodie.populate.meta.fields", True, is_true,
                                                    blank_is_unset=False)
CREATE_SCHEMA: HudiOption[str | None] = HudiOption("hoodie.table.create.schema", None, optional_text,
                                                   blank_is_unset=False)
# Hudi 0.x names key generators by class, Hudi 1.x by type.
KEY_GENERATOR: HudiOption[str] = HudiOption("hoodie.table.keygenerator.class", "", text,
                                            aliases=("hoodie.table.keygenerator.type",))

# How records merge: an explicit mode, else the payload class, else the merge strategy (TableConfig.merge_mode).
RECORD_MERGE_MODE: HudiOption[str | None] = HudiOption("hoodie.record.merge.mode", None, optional_text)
PAYLOAD_CLASS: HudiOption[str | None] = HudiOption("hoodie.compaction.payload.class", None, optional_text,
                                                   blank_is_unset=False)
# Version 9: the payload class the table was created with, its semantics written as properties.
LEGACY_PAYLOAD_CLASS: HudiOption[str | None] = HudiOption("hoodie.legacy.payload.class", None, optional_text,
                                                          blank_is_unset=False)
RECORD_MERGE_STRATEGY_ID: HudiOption[str | None] = HudiOption(
    "hoodie.record.merge.strategy.id", None, optional_text, aliases=("hoodie.compaction.record.merger.strategy",))

# The metadata table's partitions the data table says are built, and those being built (comma-separated).
METADATA_PARTITIONS: HudiOption[tuple[str, ...]] = HudiOption("hoodie.table.metadata.partitions", (), field_list)
METADATA_PARTITIONS_INFLIGHT: HudiOption[tuple[str, ...]] = HudiOption(
    "hoodie.table.metadata.partitions.inflight", (), field_list)

# LOCAL (Hudi's default when unset) or UTC: the zone the table's instant times are wall-clock times in.
TIMELINE_TIMEZONE: HudiOption[str] = HudiOption("hoodie.table.timeline.timezone", "LOCAL", text)
PARTITION_PATH_URLENCODE: HudiOption[bool] = HudiOption("hoodie.datasource.write.partitionpath.urlencode", False,
                                                        is_true, blank_is_unset=False)
DROP_PARTITION_COLUMNS: HudiOption[bool] = HudiOption("hoodie.datasource.write.drop.partition.columns", False,
                                                      is_true, blank_is_unset=False)
BOOTSTRAP_BASE_PATH: HudiOption[str | None] = HudiOption("hoodie.bootstrap.base.path", None, optional_text)
# Time-based key generators (TimestampBasedKeyGenerator): how the partition field's time is formatted.
TIMESTAMP_TYPE: HudiOption[str] = HudiOption("hoodie.keygen.timebased.timestamp.type", "EPOCHMILLISECONDS", text)
TIMESTAMP_OUTPUT_DATE_FORMAT: HudiOption[str] = HudiOption("hoodie.keygen.timebased.output.dateformat",
                                                           "yyyy-MM-dd", text)
TIMESTAMP_TIMEZONE: HudiOption[str] = HudiOption("hoodie.keygen.timebased.timezone", "UTC", text)
# Where the table's index definitions (secondary indexes) are kept, relative to the base path.
INDEX_DEFS_PATH: HudiOption[str] = HudiOption("hoodie.table.index.defs.path", ".hoodie/.index_defs/index.json", text)
