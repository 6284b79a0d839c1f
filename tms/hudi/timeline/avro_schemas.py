"""Avro schemas of Hudi's timeline metadata, in the form Java's generated classes embed them in the files they write.

Record names, namespace, field names and order, types and defaults are Hudi's (``hudi-common/src/main/avro``).
Hudi's build adds ``"avro.java.string": "String"`` to every string and map, and keeps the stray ``default``
some ``.avsc`` files put inside a type; both are reproduced so a file written here carries the same writer
schema as one written by Java. The tests compare these schemas with the writer schemas of Java-written
fixture files wherever one exists (commit metadata, compaction plan, requested replace metadata, rollback
plan and metadata).
"""

from typing import Any

NAMESPACE = "org.apache.hudi.avro.model"

_REQUIRED = object()  # marks a field without a default

STRING = {"type": "string", "avro.java.string": "String"}


def _record(name: str, *fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": f"{NAMESPACE}.{name}", "fields": list(fields)}


def _field(name: str, type_: Any, default: Any = _REQUIRED, doc: str | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {"name": name, "type": type_}
    if default is not _REQUIRED:
        field["default"] = default
    if doc is not None:
        field["doc"] = doc
    return field


def _optional(name: str, type_: Any, doc: str | None = None) -> dict[str, Any]:
    """The usual Hudi field: a union of null and the type, default null."""
    return _field(name, ["null", type_], None, doc)


def _version(default: int = 1) -> dict[str, Any]:
    return _field("version", ["int", "null"], default)


def _map(values: Any, **props: Any) -> dict[str, Any]:
    return {"type": "map", "values": values, "avro.java.string": "String", **props}


def _array(items: Any, **props: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **props}


# --- commit metadata (table version 8+; version 6 writes the same content as JSON) ---------------------------

RUNTIME_STATS = _record(
    "HoodieRuntimeStats",
    _optional("totalScanTime", "long"),
    _optional("totalCreateTime", "long"),
    _optional("totalUpsertTime", "long"),
)

WRITE_STAT = _record(
    "HoodieWriteStat",
    _optional("fileId", STRING),
    _optional("path", STRING),
    _optional("prevCommit", STRING),
    _optional("numWrites", "long"),
    _optional("numDeletes", "long"),
    _optional("numUpdateWrites", "long"),
    _optional("totalWriteBytes", "long"),
    _optional("totalWriteErrors", "long"),
    _optional("partitionPath", STRING),
    _optional("totalLogRecords", "long"),
    _optional("totalLogFiles", "long"),
    _optional("totalUpdatedRecordsCompacted", "long"),
    _optional("numInserts", "long"),
    _optional("totalLogBlocks", "long"),
    _optional("totalCorruptLogBlock", "long"),
    _optional("totalRollbackBlocks", "long"),
    _optional("fileSizeInBytes", "long"),
    _optional("logVersion", "int"),
    _optional("logOffset", "long"),
    _optional("baseFile", STRING),
    _optional("logFiles", _array(STRING, default=None)),
    _optional("cdcStats", _map("long", default=None)),
    _optional("prevBaseFile", STRING),
    _optional("minEventTime", "long"),
    _optional("maxEventTime", "long"),
    _optional("runtimeStats", RUNTIME_STATS),
    _optional("totalLogFilesCompacted", "long"),
    _optional("totalLogReadTimeMs", "long"),
    _optional("totalLogSizeCompacted", "long"),
    _optional("tempPath", STRING),
    _optional("numUpdates", "long"),
)

_COMMIT_FIELDS = (
    _optional("partitionToWriteStats", _map(_array(WRITE_STAT))),
    _optional("compacted", "boolean"),
    _optional("extraMetadata", _map(STRING, default=None)),
    _version(),
    _optional("operationType", STRING),
)

COMMIT_METADATA = _record("HoodieCommitMetadata", *_COMMIT_FIELDS)

# Hudi 1.x writes completed replace commits with this record: HoodieCommitMetadata's fields (but for the
# map of extraMetadata, which has no default inside its union: as the Java-written v9 replace commits have it)
# plus partitionToReplaceFileIds.
REPLACE_COMMIT_METADATA = _record(
    "HoodieReplaceCommitMetadata",
    *(_optional("extraMetadata", _map(STRING)) if f["name"] == "extraMetadata" else f for f in _COMMIT_FIELDS),
    _optional("partitionToReplaceFileIds", _map(_array(STRING))),
)

# --- compaction plan ----------------------------------------------------------------------------------------

COMPACTION_PLAN = _record(
    "HoodieCompactionPlan",
    _optional(
        "operations",
        _array(
            _record(
                "HoodieCompactionOperation",
                _field("baseInstantTime", ["null", STRING]),
                _optional("deltaFilePaths", _array(STRING)),
                _optional("dataFilePath", STRING),
                _field("fileId", ["null", STRING]),
                _optional("partitionPath", STRING),
                _optional("metrics", _map("double")),
                _optional("bootstrapFilePath", STRING),
            )
        ),
    ),
    _optional("extraMetadata", _map(STRING)),
    _version(),
    _optional(
        "strategy",
        _record(
            "HoodieCompactionStrategy",
            _optional(
                "compactorClassName",
                STRING,
                doc="The class name that is provided here should extend CompactionExecutionStrategy abstract "
                "class, idea is that the plan generator will also provide the execution strategy to use.",
            ),
            _optional(
                "strategyParams",
                _map(STRING),
                doc="These parameters play a key role in determining which action type it is i.e. compaction "
                "or logcompaction and it will also include configs that determine how compaction needs to be "
                "executed.",
            ),
            _version(),
        ),
    ),
    _field("preserveHoodieMetadata", ["boolean", "null"], False),
    _optional("missingSchedulePartitions", _array(STRING)),
)

# --- clustering plan (v6 replacecommit.requested, v8 clustering.requested) ----------------------------------

# As written by Hudi 0.14/0.15, plus missingSchedulePartitions, which Hudi 1.x appends to HoodieClusteringPlan
# (older readers skip it, newer ones default it to null when absent).
CLUSTERING_PLAN = _record(
    "HoodieClusteringPlan",
    _optional(
        "inputGroups",
        _array(
            _record(
                "HoodieClusteringGroup",
                _optional(
                    "slices",
                    _array(
                        _record(
                            "HoodieSliceInfo",
                            _optional("dataFilePath", STRING),
                            _optional("deltaFilePaths", _array(STRING)),
                            _field("fileId", ["null", STRING]),
                            _optional("partitionPath", STRING),
                            _optional("bootstrapFilePath", STRING),
                            _version(),
                        )
                    ),
                ),
                _optional("metrics", _map("double")),
                _field("numOutputFileGroups", ["int", "null"], 1),
                _optional("extraMetadata", _map(STRING)),
                _version(),
            )
        ),
    ),
    _optional(
        "strategy",
        _record(
            "HoodieClusteringStrategy",
            _optional("strategyClassName", STRING),
            _optional("strategyParams", _map(STRING)),
            _version(),
        ),
    ),
    _optional("extraMetadata", _map(STRING)),
    _version(),
    _optional("preserveHoodieMetadata", "boolean"),
    _optional("missingSchedulePartitions", _array(STRING)),
)

REQUESTED_REPLACE_METADATA = _record(
    "HoodieRequestedReplaceMetadata",
    _optional("operationType", STRING),
    _optional("clusteringPlan", CLUSTERING_PLAN),
    _optional("extraMetadata", _map(STRING)),
    _version(),
)


def _only(record: dict[str, Any], *names: str, **replaced: Any) -> dict[str, Any]:
    """`record` with only the fields `names` (those in `replaced` given another type): a reader schema that
    projects it, fastavro skipping the other fields' bytes without building them."""
    fields = [{**f, "type": replaced.get(f["name"], f["type"])} for f in record["fields"] if f["name"] in names]
    return {**record, "fields": fields}


# What a plan records of how it was scheduled, read without its operations or input groups (the bulk of the file):
# reader schemas of a compaction plan and of a requested replace's clustering plan.
_SCOPE_FIELDS = ("extraMetadata", "missingSchedulePartitions")
COMPACTION_PLAN_SCOPE = _only(COMPACTION_PLAN, *_SCOPE_FIELDS)
REQUESTED_REPLACE_SCOPE = _only(REQUESTED_REPLACE_METADATA, "clusteringPlan",
                                clusteringPlan=["null", _only(CLUSTERING_PLAN, *_SCOPE_FIELDS)])

# The partitions a completed write names, read without its write statistics' values (the bulk of the file):
# reader schemas of commit and replace commit metadata, each statistic projected to its file id.
_PARTITION_STATS = ["null", _map(_array(_only(WRITE_STAT, "fileId")))]
COMMIT_PARTITIONS = _only(COMMIT_METADATA, "partitionToWriteStats", partitionToWriteStats=_PARTITION_STATS)
REPLACE_COMMIT_PARTITIONS = _only(REPLACE_COMMIT_METADATA, "partitionToWriteStats", "partitionToReplaceFileIds",
                                  partitionToWriteStats=_PARTITION_STATS)

# --- clean --------------------------------------------------------------------------------------------------

CLEANER_PLAN = _record(
    "HoodieCleanerPlan",
    _optional(
        "earliestInstantToRetain",
        _record(
            "HoodieActionInstant",
            _field("timestamp", STRING),
            _field("action", STRING),
            _field("state", STRING),
        ),
    ),
    _field("lastCompletedCommitTimestamp", STRING, ""),
    _field("policy", STRING),
    # deprecated by filePathsToBeDeletedPerPartition
    _optional("filesToBeDeletedPerPartition", _map(_array(STRING))),
    _version(),
    _optional(
        "filePathsToBeDeletedPerPartition",
        _map(
            _array(
                _record(
                    "HoodieCleanFileInfo",
                    _optional("filePath", STRING),
                    _optional("isBootstrapBaseFile", "boolean"),
                )
            )
        ),
        doc="This field replaces the field filesToBeDeletedPerPartition",
    ),
    _optional("partitionsToBeDeleted", _array(STRING), doc="partitions to be deleted"),
    _optional("extraMetadata", _map(STRING, default=None)),
)

CLEAN_PARTITION_METADATA = _record(
    "HoodieCleanPartitionMetadata",
    _field("partitionPath", STRING),
    _field("policy", STRING),
    _field("deletePathPatterns", _array(STRING)),
    _field("successDeleteFiles", _array(STRING)),
    _field("failedDeleteFiles", _array(STRING)),
    _optional("isPartitionDeleted", "boolean"),
)

CLEAN_METADATA = _record(
    "HoodieCleanMetadata",
    _field("startCleanTime", STRING),
    _field("timeTakenInMillis", "long"),
    _field("totalFilesDeleted", "int"),
    _field("earliestCommitToRetain", STRING),
    _field("lastCompletedCommitTimestamp", STRING, ""),
    _field("partitionMetadata", _map(CLEAN_PARTITION_METADATA)),
    _version(),
    # the second use of a named type is a reference to it by name
    _optional("bootstrapPartitionMetadata", _map(CLEAN_PARTITION_METADATA["name"], default=None)),
    _optional("extraMetadata", _map(STRING, default=None)),
)

# --- rollback -----------------------------------------------------------------------------------------------

INSTANT_INFO = _record("HoodieInstantInfo", _field("commitTime", STRING), _field("action", STRING))

ROLLBACK_PLAN = _record(
    "HoodieRollbackPlan",
    _optional("instantToRollback", INSTANT_INFO, doc="Hoodie instant that needs to be rolled back"),
    _optional(
        "RollbackRequests",
        _array(
            _record(
                "HoodieRollbackRequest",
                _field("partitionPath", STRING),
                _optional("fileId", STRING),
                _optional("latestBaseInstant", STRING),
                _field("filesToBeDeleted", _array(STRING, default=[]), []),
                _optional("logBlocksToBeDeleted", _map("long")),
            )
        ),
    ),
    _version(),
)

ROLLBACK_METADATA = _record(
    "HoodieRollbackMetadata",
    _field("startRollbackTime", STRING),
    _field("timeTakenInMillis", "long"),
    _field("totalFilesDeleted", "int"),
    _field("commitsRollback", _array(STRING)),
    _field(
        "partitionMetadata",
        _map(
            _record(
                "HoodieRollbackPartitionMetadata",
                _field("partitionPath", STRING),
                _field("successDeleteFiles", _array(STRING)),
                _field("failedDeleteFiles", _array(STRING)),
                _optional("rollbackLogFiles", _map("long")),
                _optional("logFilesFromFailedCommit", _map("long")),
            )
        ),
    ),
    _version(),
    _field("instantsRollback", _array(INSTANT_INFO, default=[]), []),
)

# --- savepoint and restore ----------------------------------------------------------------------------------

SAVEPOINT_METADATA = _record(
    "HoodieSavepointMetadata",
    _field("savepointedBy", STRING),
    _field("savepointedAt", "long"),
    _field("comments", STRING),
    _field(
        "partitionMetadata",
        _map(
            _record(
                "HoodieSavepointPartitionMetadata",
                _field("partitionPath", STRING),
                _field("savepointDataFile", _array(STRING)),
            )
        ),
    ),
    _version(),
)

RESTORE_PLAN = _record(
    "HoodieRestorePlan",
    _field("instantsToRollback", _array(INSTANT_INFO, default=None), []),
    _version(2),
    _field("savepointToRestoreTimestamp", [STRING, "null"], None),
)

RESTORE_METADATA = _record(
    "HoodieRestoreMetadata",
    _field("startRestoreTime", STRING),
    _field("timeTakenInMillis", "long"),
    _field("instantsToRollback", _array(STRING)),
    # Java embeds each named record where it first appears and names it afterwards.
    _field("hoodieRestoreMetadata", _map(_array(["null", ROLLBACK_METADATA], default=None,
                                                name="hoodieRollbackMetadata"))),
    _version(),
    _field("restoreInstantInfo", _array(f"{NAMESPACE}.HoodieInstantInfo", default=None), []),
    _optional("extraMetadata", _map(STRING)),
)

# --- indexing (HoodieIndexPlan.avsc, HoodieIndexCommitMetadata.avsc, HoodieIndexPartitionInfo.avsc) -----------

INDEX_PARTITION_INFO = _record(
    "HoodieIndexPartitionInfo",
    _version(),
    _optional("metadataPartitionPath", STRING),
    _optional("indexUptoInstant", STRING),
)

INDEX_PLAN = _record(
    "HoodieIndexPlan",
    _version(),
    _optional("indexPartitionInfos", _array(INDEX_PARTITION_INFO)),
)

INDEX_COMMIT_METADATA = _record(
    "HoodieIndexCommitMetadata",
    _field("version", ["int", "null"], 1, doc="This field replaces the field filesToBeDeletedPerPartition"),
    _optional("operationType", STRING, doc="This field replaces the field filesToBeDeletedPerPartition"),
    _optional("indexPartitionInfos", _array(INDEX_PARTITION_INFO),
              doc="This field contains the info for each partition that got indexed"),
)

ALL = (
    COMMIT_METADATA,
    REPLACE_COMMIT_METADATA,
    COMPACTION_PLAN,
    REQUESTED_REPLACE_METADATA,
    CLEANER_PLAN,
    CLEAN_METADATA,
    ROLLBACK_PLAN,
    ROLLBACK_METADATA,
    SAVEPOINT_METADATA,
    RESTORE_PLAN,
    RESTORE_METADATA,
    INDEX_PLAN,
    INDEX_COMMIT_METADATA,
)

# --- the archived timeline of table version 6 (Hudi 0.x's HoodieArchivedMetaEntry.avsc) -------------------
# Hudi 0.15's records are the ones above less the fields Hudi 1.x added to them.


def _without(record: dict[str, Any], *names: str, **replaced: Any) -> dict[str, Any]:
    """`record` less the fields `names`, with the fields named in `replaced` given another type."""
    fields = [{**f, "type": replaced[f["name"]]} if f["name"] in replaced else f
              for f in record["fields"] if f["name"] not in names]
    return {**record, "fields": fields}


def _defined_once(schema: Any, seen: set[str] | None = None) -> Any:
    """`schema` with every named type after its first definition referenced by its name (as Avro requires)."""
    seen = set() if seen is None else seen
    if isinstance(schema, list):
        return [_defined_once(s, seen) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "record":
        if schema["name"] in seen:
            return schema["name"]
        seen.add(schema["name"])
        return {**schema, "fields": [{**f, "type": _defined_once(f["type"], seen)} for f in schema["fields"]]}
    if schema.get("type") == "array":
        return {**schema, "items": _defined_once(schema["items"], seen)}
    if schema.get("type") == "map":
        return {**schema, "values": _defined_once(schema["values"], seen)}
    return schema


_WRITE_STAT_V6 = {**WRITE_STAT, "fields": WRITE_STAT["fields"][:17]}  # fileId .. fileSizeInBytes
_STATS_V6 = _map(_array(_WRITE_STAT_V6))
COMMIT_METADATA_V6 = _without(COMMIT_METADATA, "compacted", partitionToWriteStats=["null", _STATS_V6])
_COMPACTION_PLAN_V6 = _without(COMPACTION_PLAN, "missingSchedulePartitions")
_CLUSTERING_PLAN_V6 = _without(CLUSTERING_PLAN, "missingSchedulePartitions")
_COMPACTION_METADATA_V6 = _record(
    "HoodieCompactionMetadata",
    _field("partitionToCompactionWriteStats", ["null", _map(_array(_record(
        "HoodieCompactionWriteStat",
        _optional("partitionPath", STRING),
        _optional("totalLogRecords", "long"),
        _optional("totalLogFiles", "long"),
        _optional("totalUpdatedRecordsCompacted", "long"),
        _optional("hoodieWriteStat", _WRITE_STAT_V6["name"]),
    )))]),
)

ARCHIVED_META_ENTRY_V6 = _defined_once(_record(
    "HoodieArchivedMetaEntry",
    _optional("hoodieCommitMetadata", COMMIT_METADATA_V6),
    _optional("hoodieCleanMetadata", CLEAN_METADATA),
    _optional("hoodieCompactionMetadata", _COMPACTION_METADATA_V6),
    _optional("hoodieRollbackMetadata", ROLLBACK_METADATA),
    _optional("hoodieSavePointMetadata", SAVEPOINT_METADATA),
    _optional("commitTime", STRING),
    _optional("actionType", STRING),
    _version(),
    _optional("hoodieCompactionPlan", _COMPACTION_PLAN_V6),
    _optional("hoodieCleanerPlan", CLEANER_PLAN),
    _optional("actionState", STRING),
    _optional("hoodieReplaceCommitMetadata", _without(REPLACE_COMMIT_METADATA, "compacted",
                                                      partitionToWriteStats=["null", _STATS_V6])),
    _optional("hoodieRequestedReplaceMetadata", _without(REQUESTED_REPLACE_METADATA,
                                                         clusteringPlan=["null", _CLUSTERING_PLAN_V6])),
    _optional("HoodieInflightReplaceMetadata", COMMIT_METADATA_V6),
    _optional("hoodieIndexCommitMetadata", INDEX_COMMIT_METADATA),
    _optional("stateTransitionTime", STRING),
))
