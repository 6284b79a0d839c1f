"""Serialisation of Hudi's timeline metadata: commit metadata, compaction, clustering, clean and rollback plans.

Pure functions over bytes; callers read and write the instant files. Every Avro file is an object container
with one record, written with the schemas of :mod:`tms.hudi.timeline.avro_schemas` and no codec, as Java writes them.
Commit metadata is JSON (pretty-printed the way Jackson does it) on table version 6 and Avro on 8 and 9.

The model is a set of small dataclasses. Each maps to one Avro record: a field's Avro name is its name in
camelCase, and ``from_avro``/``to_avro`` convert to and from the plain dicts fastavro reads and writes (v6
commit JSON uses the same names). A null list or map in a file reads as an empty one, except in the few fields
where None means something else (noted on the field).
"""

from __future__ import annotations

import functools
import io
import json
import operator
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

import fastavro
from fastavro.validation import ValidationError, validate

from tms.hudi.errors import HudiError
from tms.hudi.table.version_traits import SUPPORTED_VERSIONS, TableVersionTraits
from tms.hudi.timeline import avro_schemas

AVRO_MAGIC = b"Obj\x01"

_SCHEMAS = {schema["name"]: fastavro.parse_schema(schema) for schema in avro_schemas.ALL}
# Reader schemas of the plans' scope (read_plan_extra_metadata), by the writer schema's name they read.
_SCOPE_SCHEMAS = {schema["name"]: fastavro.parse_schema(schema)
                  for schema in (avro_schemas.COMPACTION_PLAN_SCOPE, avro_schemas.REQUESTED_REPLACE_SCOPE)}
# Reader schemas of the partitions a completed write names (read_commit_partitions).
_PARTITION_SCHEMAS = {schema["name"]: fastavro.parse_schema(schema)
                      for schema in (avro_schemas.COMMIT_PARTITIONS, avro_schemas.REPLACE_COMMIT_PARTITIONS)}


class MetadataFormatError(HudiError, ValueError):
    """Bytes that are not the expected Hudi metadata, or a model that cannot be written as such."""


class FileBytes(bytes):
    """The bytes of a file that know its path (Timeline.read's), so that a parser refusing them names it."""

    path: str

    def __new__(cls, data: bytes, path: str) -> FileBytes:
        made = super().__new__(cls, data)
        made.path = path
        return made


P = TypeVar("P")


def _names_the_file(parse: Callable[[bytes], P]) -> Callable[[bytes], P]:
    """A parser whose MetadataFormatError names the file its bytes came from (FileBytes), once."""

    @functools.wraps(parse)
    def parse_file(data: bytes) -> P:
        try:
            return parse(data)
        except MetadataFormatError as e:
            path = getattr(data, "path", None)
            if path is None or str(e).startswith(f"{path}: "):
                raise
            raise MetadataFormatError(f"{path}: {e}") from e

    return parse_file


# --- the record mapping -------------------------------------------------------------------------------------

R = TypeVar("R", bound="_Record")


@functools.cache  # a field's name, asked for each record of each file
def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _avro_name(f: Field[Any]) -> str:
    name: str = f.metadata.get("avro", _camel(f.name))
    return name


def _nested(shape: str, cls: type, **kwargs: Any) -> Any:
    """A field holding records of ``cls``; shape is one of "one", "list", "map", "map_list"."""
    return field(metadata={"nested": (shape, cls)}, **kwargs)


def _convert(value: Any, shape: str, fn: Callable[[Any], Any]) -> Any:
    if value is None:
        return None
    if shape == "one":
        return fn(value)
    if shape == "list":
        return [fn(v) for v in value]
    if shape == "map":
        return {k: fn(v) for k, v in value.items()}
    return {k: [fn(v) for v in vs] for k, vs in value.items()}  # map_list


class _Record:
    """Dataclass mixin: conversion to and from the dict of the Avro record ``schema_name``."""

    schema_name: ClassVar[str] = ""  # set on the classes that are the top-level record of a file
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # the subclasses are dataclasses

    @classmethod
    def from_avro(cls: type[R], record: dict[str, Any]) -> R:
        kwargs = {}
        for name, avro, nested, default_factory in _mapping(cls):
            if avro not in record:
                continue  # written with an older schema: keep the model's default
            value = record[avro]
            if value is None and default_factory is not MISSING:
                value = default_factory()
            elif nested is not None:
                value = _convert(value, nested[0], nested[1].from_avro)
            kwargs[name] = value
        return cls(**kwargs)

    def to_avro(self) -> dict[str, Any]:
        record = {}
        for name, avro, nested, _ in _mapping(type(self)):
            value = getattr(self, name)
            if nested is not None:
                value = _convert(value, nested[0], _to_avro)
            record[avro] = value
        return record


_to_avro = operator.methodcaller("to_avro")


_FieldMapping = tuple[tuple[str, str, tuple[str, type[_Record]] | None, Any], ...]
_MAPPINGS: dict[type, _FieldMapping] = {}


def _mapping(cls: type) -> _FieldMapping:
    """Each field of a record class: (its name, its Avro name, (shape, class) if it holds records, its default
    factory); made once per class, asked for each record of each file (a commit of 10,000 write statistics)."""
    found = _MAPPINGS.get(cls)
    if found is None:
        found = _MAPPINGS[cls] = tuple((f.name, _avro_name(f), f.metadata.get("nested"), f.default_factory)
                                       for f in fields(cls))
    return found


# --- Avro containers ----------------------------------------------------------------------------------------


@_names_the_file
def parse_any_avro(data: bytes) -> tuple[str, dict[str, Any]]:
    """The full record name of the writer schema and the single record of an Avro metadata file."""
    return _single_record(data)


def _single_record(data: bytes, reader_schemas: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The writer schema's record name and the file's single record, read with the reader schema
    `reader_schemas` holds for that name if any (a projection: the fields it leaves out are skipped)."""
    if not data:
        raise MetadataFormatError("empty metadata file")
    if not data.startswith(AVRO_MAGIC):
        raise MetadataFormatError("not an Avro object container file")
    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema = reader.writer_schema
        name = schema.get("name") if isinstance(schema, dict) and schema.get("type") == "record" else None
        if name is None:
            raise MetadataFormatError("the Avro container does not hold records")
        if reader_schemas and name in reader_schemas:
            reader = fastavro.reader(io.BytesIO(data), reader_schema=reader_schemas[name])
        records = list(reader)
    except MetadataFormatError:
        raise
    except Exception as e:  # fastavro reports corrupt input with many exception types
        raise MetadataFormatError(f"corrupt Avro container: {e}") from e
    if len(records) != 1:
        raise MetadataFormatError(f"expected one record in the Avro container, found {len(records)}")
    record = records[0]
    if not isinstance(record, dict):
        raise MetadataFormatError("the Avro container does not hold records")
    return name, record


def _parse(cls: type[R], data: bytes) -> R:
    name, record = parse_any_avro(data)
    if name != cls.schema_name:
        raise MetadataFormatError(f"expected {cls.schema_name}, found {name}")
    return _build(cls, record)


def json_commit_metadata(data: bytes) -> dict[str, Any]:
    """Commit metadata written as JSON (table versions before 8, and Java's archive records), as a dict."""
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MetadataFormatError(f"commit metadata is neither Avro nor JSON: {e}") from e
    if not isinstance(doc, dict):
        raise MetadataFormatError("commit metadata JSON is not an object")
    return doc


def _build(cls: type[R], record: dict[str, Any]) -> R:
    try:
        return cls.from_avro(record)
    except (TypeError, AttributeError, KeyError, ValueError) as e:
        raise MetadataFormatError(f"malformed {cls.__name__}: {e}") from e


def _write_avro(schema_name: str, record: dict[str, Any]) -> bytes:
    schema = _SCHEMAS[schema_name]
    # The record checked as fastavro's validating writer checks it, but without building an error for each union
    # branch a value does not take (which the validating writer does: 6/7 of the time of writing a commit of
    # 10,000 write stats); the reason asked for only when the check fails.
    try:
        if not validate(record, schema, raise_errors=False):
            validate(record, schema, raise_errors=True)
    except ValidationError as e:
        raise MetadataFormatError(f"cannot write {schema_name}: {e}") from e
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [record], codec="null", validator=False)
    return buf.getvalue()


def _serialize(obj: _Record) -> bytes:
    return _write_avro(obj.schema_name, obj.to_avro())


def _full(name: str) -> str:
    return f"{avro_schemas.NAMESPACE}.{name}"


# --- commit metadata ----------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class RuntimeStats(_Record):
    total_scan_time: int | None = 0
    total_upsert_time: int | None = 0
    total_create_time: int | None = 0


# Fields of Java's HoodieDeltaWriteStat (log writes): Jackson writes them only for such stats, which are the
# ones with a logFiles list.
_DELTA_FIELDS = frozenset({"log_version", "log_offset", "base_file", "log_files"})
# Fields Hudi 0.x's HoodieWriteStat does not have: left out of v6 JSON unless set.
_HUDI1_FIELDS = frozenset({"prev_base_file", "total_log_files", "total_log_read_time_ms", "num_updates"})


@dataclass(kw_only=True)
class WriteStat(_Record):
    """One file written by a commit. Field order is the order Jackson writes them in (v6 JSON)."""

    file_id: str | None = None
    path: str | None = None  # relative to the table's base path
    cdc_stats: dict[str, int] | None = None
    prev_commit: str | None = None  # "null" (a string) for a new file group
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    temp_path: str | None = None
    partition_path: str | None = None
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: RuntimeStats | None = _nested("one", RuntimeStats, default=None)
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: list[str] | None = None  # a list (maybe empty) marks a log write
    prev_base_file: str | None = None  # compaction: the base file replaced
    total_log_files: int | None = None
    total_log_read_time_ms: int | None = None
    num_updates: int | None = None

    def to_jackson(self) -> dict[str, Any]:
        """The dict Hudi 0.x's Jackson writes for this stat, in its key order."""
        doc: dict[str, Any] = {}
        is_delta = self.log_files is not None
        for f in fields(self):
            value = getattr(self, f.name)
            if (f.name in _DELTA_FIELDS and not is_delta) or (f.name in _HUDI1_FIELDS and value is None):
                continue
            doc[_camel(f.name)] = value.to_avro() if isinstance(value, RuntimeStats) else value
            if f.name == "log_files":
                doc["recordsStats"] = {"val": None}  # Java's empty Option of column stats, as Jackson writes it
        return doc


DELETE_PARTITION = "DELETE_PARTITION"  # the operation type of Hudi's delete_partition replacecommit
# TMS's extra metadata of a compaction or clustering plan, and of its commit: the record TTL it applies (the
# field, and the moment before which a record has expired), so that every attempt drops the same records.
TTL_FIELD_KEY = "tms.ttl.field"
TTL_CUTOFF_KEY = "tms.ttl.cutoff.millis"


@dataclass(kw_only=True)
class CommitMetadata(_Record):
    """Content of a completed commit, deltacommit or replacecommit (and of their inflight files).

    ``partition_to_replace_file_ids`` is None for plain commit metadata and a dict for replace commit metadata
    (Java's HoodieReplaceCommitMetadata), even when nothing is replaced.
    """

    partition_to_write_stats: dict[str, list[WriteStat]] = _nested("map_list", WriteStat, default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = None
    partition_to_replace_file_ids: dict[str, list[str]] | None = None

    @property
    def is_replace(self) -> bool:
        return self.partition_to_replace_file_ids is not None

    def write_stats(self) -> list[WriteStat]:
        return [stat for stats in self.partition_to_write_stats.values() for stat in stats]

    def written_file_paths(self) -> list[str]:
        """Paths, relative to the base path, of the files this commit wrote."""
        return [stat.path for stat in self.write_stats() if stat.path]

    def schema(self) -> dict[str, Any] | None:
        """The table's data schema (Avro, without meta fields) recorded in ``extraMetadata['schema']``."""
        text = self.extra_metadata.get("schema")
        if not text:
            return None
        try:
            schema: dict[str, Any] = json.loads(text)
        except json.JSONDecodeError as e:
            raise MetadataFormatError(f"extraMetadata['schema'] is not JSON: {e}") from e
        return schema


_COMMIT = _full("HoodieCommitMetadata")
_REPLACE_COMMIT = _full("HoodieReplaceCommitMetadata")


@_names_the_file
def parse_commit_metadata(data: bytes) -> CommitMetadata:
    """Commit metadata from JSON (v6) or Avro (v8+) bytes; empty bytes (requested instants) give empty metadata."""
    if not data.strip():
        return CommitMetadata()
    if data.startswith(AVRO_MAGIC):
        name, doc = parse_any_avro(data)
        if name not in (_COMMIT, _REPLACE_COMMIT):
            raise MetadataFormatError(f"expected {_COMMIT} or {_REPLACE_COMMIT}, found {name}")
        is_replace = name == _REPLACE_COMMIT
    else:
        doc = json_commit_metadata(data)
        is_replace = "partitionToReplaceFileIds" in doc
    meta = _build(CommitMetadata, doc)
    if is_replace and meta.partition_to_replace_file_ids is None:
        meta.partition_to_replace_file_ids = {}
    return meta


@_names_the_file
def read_commit_partitions(data: bytes) -> set[str]:
    """The partition paths commit metadata (JSON or Avro) names, written to or replaced in ('' for a
    non-partitioned table's), without building its write statistics: a third of parse_commit_metadata's time."""
    if not data.strip():
        return set()
    if data.startswith(AVRO_MAGIC):
        name, doc = _single_record(data, _PARTITION_SCHEMAS)
        if name not in (_COMMIT, _REPLACE_COMMIT):
            raise MetadataFormatError(f"expected {_COMMIT} or {_REPLACE_COMMIT}, found {name}")
    else:
        doc = json_commit_metadata(data)
    named: set[str] = set()
    for key in ("partitionToWriteStats", "partitionToReplaceFileIds"):
        partitions = doc.get(key) or {}
        if not isinstance(partitions, dict):
            raise MetadataFormatError(f"malformed commit metadata: {key} is not a map")
        named.update(p or "" for p in partitions)
    return named


def serialize_commit_metadata(meta: CommitMetadata, table_version: int) -> bytes:
    """Bytes of a commit instant file: Jackson-style JSON for table version 6, an Avro container for 8 and 9."""
    if table_version not in SUPPORTED_VERSIONS:
        raise ValueError(f"unsupported table version {table_version} (supported: 6, 8, 9)")
    if not TableVersionTraits(table_version).avro_commit_metadata:
        doc = {
            "partitionToWriteStats": {
                partition: [stat.to_jackson() for stat in stats]
                for partition, stats in meta.partition_to_write_stats.items()
            },
            "compacted": meta.compacted,
            "extraMetadata": meta.extra_metadata,
            "operationType": meta.operation_type,
        }
        if meta.is_replace:
            doc["partitionToReplaceFileIds"] = meta.partition_to_replace_file_ids
        return _jackson_pretty(doc).encode("utf-8")
    record = meta.to_avro()
    record["version"] = None  # Java converts its POJO with Jackson, which leaves version null
    if not meta.is_replace:
        del record["partitionToReplaceFileIds"]
    return _write_avro(_REPLACE_COMMIT if meta.is_replace else _COMMIT, record)


def _jackson_pretty(value: Any, depth: int = 0) -> str:
    """JSON as Jackson's default pretty printer writes it: objects one entry per line with two-space indents,
    arrays inline, ``" : "`` between key and value, ``{ }`` and ``[ ]`` when empty, no final newline."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        pad = "  " * (depth + 1)
        entries = [
            f"{pad}{json.dumps(key, ensure_ascii=False)} : {_jackson_pretty(item, depth + 1)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(entries) + "\n" + "  " * depth + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_jackson_pretty(v, depth) for v in value) + " ]"  # arrays add no indent level
    return json.dumps(value, ensure_ascii=False)


# --- compaction plan ----------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class CompactionOperation(_Record):
    """One file slice to compact: its base file (if any) and log files, names relative to the partition."""

    base_instant_time: str | None
    file_id: str | None
    partition_path: str | None = None
    data_file_path: str | None = None
    delta_file_paths: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    bootstrap_file_path: str | None = None


@dataclass(kw_only=True)
class CompactionStrategy(_Record):
    compactor_class_name: str | None = None
    strategy_params: dict[str, str] = field(default_factory=dict)
    version: int | None = 1


@dataclass(kw_only=True)
class CompactionPlan(_Record):
    """Content of ``<T>.compaction.requested``."""

    schema_name: ClassVar[str] = _full("HoodieCompactionPlan")

    operations: list[CompactionOperation] = _nested("list", CompactionOperation, default_factory=list)
    extra_metadata: dict[str, str] = field(default_factory=dict)
    version: int | None = 2
    strategy: CompactionStrategy | None = _nested("one", CompactionStrategy, default=None)
    preserve_hoodie_metadata: bool | None = False
    # None: Hudi's incremental table services are off; a list: partitions left for the next plan
    missing_schedule_partitions: list[str] | None = None


@_names_the_file
def parse_compaction_plan(data: bytes) -> CompactionPlan:
    return _parse(CompactionPlan, data)


def serialize_compaction_plan(plan: CompactionPlan) -> bytes:
    return _serialize(plan)


# --- clustering plan ----------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class SliceInfo(_Record):
    """One file slice of a clustering group; file names relative to the partition."""

    file_id: str | None
    partition_path: str | None = None
    data_file_path: str | None = None
    delta_file_paths: list[str] = field(default_factory=list)
    bootstrap_file_path: str | None = None
    version: int | None = 1


@dataclass(kw_only=True)
class ClusteringGroup(_Record):
    slices: list[SliceInfo] = _nested("list", SliceInfo, default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    num_output_file_groups: int | None = 1
    extra_metadata: dict[str, str] = field(default_factory=dict)
    version: int | None = 1


@dataclass(kw_only=True)
class ClusteringStrategy(_Record):
    strategy_class_name: str | None = None
    strategy_params: dict[str, str] = field(default_factory=dict)
    version: int | None = 1


@dataclass(kw_only=True)
class ClusteringPlan(_Record):
    input_groups: list[ClusteringGroup] = _nested("list", ClusteringGroup, default_factory=list)
    strategy: ClusteringStrategy | None = _nested("one", ClusteringStrategy, default=None)
    extra_metadata: dict[str, str] = field(default_factory=dict)
    version: int | None = 1
    preserve_hoodie_metadata: bool | None = None
    missing_schedule_partitions: list[str] | None = None


@dataclass(kw_only=True)
class RequestedReplaceMetadata(_Record):
    """Content of v6 ``<T>.replacecommit.requested`` and v8 ``<T>.clustering.requested``: the clustering plan,
    or no plan for replace commits that are not clustering (insert_overwrite, delete_partition)."""

    schema_name: ClassVar[str] = _full("HoodieRequestedReplaceMetadata")

    operation_type: str | None = None
    clustering_plan: ClusteringPlan | None = _nested("one", ClusteringPlan, default=None)
    extra_metadata: dict[str, str] = field(default_factory=dict)
    version: int | None = 1


@_names_the_file
def parse_requested_replace_metadata(data: bytes) -> RequestedReplaceMetadata:
    return _parse(RequestedReplaceMetadata, data)


def serialize_requested_replace_metadata(meta: RequestedReplaceMetadata) -> bytes:
    return _serialize(meta)


@dataclass(frozen=True)
class PlanExtraMetadata:
    """What a compaction or clustering plan records of how it was scheduled, beside its operations."""

    extra_metadata: dict[str, str]
    # None: Hudi's incremental table services are off; a list: partitions left for the next plan
    missing_schedule_partitions: list[str] | None


@_names_the_file
def read_plan_extra_metadata(data: bytes) -> PlanExtraMetadata | None:
    """The extraMetadata and missingSchedulePartitions of a compaction plan (``<T>.compaction.requested``) or of
    the clustering plan of a requested replace (None: one without a clustering plan, as an insert_overwrite's),
    without building its operations or input groups: a plan of 10,000 file groups reads in a third of the time
    of parse_compaction_plan."""
    name, record = _single_record(data, _SCOPE_SCHEMAS)
    plan: dict[str, Any] | None = record
    if name == RequestedReplaceMetadata.schema_name:
        plan = record.get("clusteringPlan")
    elif name != CompactionPlan.schema_name:
        raise MetadataFormatError(f"expected {CompactionPlan.schema_name} or {RequestedReplaceMetadata.schema_name}, "
                                  f"found {name}")
    if plan is None:
        return None
    extra, missing = plan.get("extraMetadata"), plan.get("missingSchedulePartitions")
    if not isinstance(extra, dict | None) or not isinstance(missing, list | None):
        raise MetadataFormatError(f"malformed {name.rsplit('.', 1)[-1]}: extraMetadata or missingSchedulePartitions")
    return PlanExtraMetadata(dict(extra or {}), missing)


# --- clean --------------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class ActionInstant(_Record):
    timestamp: str
    action: str
    state: str


@dataclass(kw_only=True)
class CleanFileInfo(_Record):
    file_path: str | None  # absolute path of the file to delete
    is_bootstrap_base_file: bool | None = False


@dataclass(kw_only=True)
class CleanerPlan(_Record):
    """Content of ``<T>.clean.requested`` (and ``.clean.inflight``)."""

    schema_name: ClassVar[str] = _full("HoodieCleanerPlan")

    earliest_instant_to_retain: ActionInstant | None = _nested("one", ActionInstant, default=None)
    last_completed_commit_timestamp: str = ""
    policy: str
    files_to_be_deleted_per_partition: dict[str, list[str]] = field(default_factory=dict)  # deprecated, v1 plans
    version: int | None = 2
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] = _nested(
        "map_list", CleanFileInfo, default_factory=dict
    )
    partitions_to_be_deleted: list[str] = field(default_factory=list)
    extra_metadata: dict[str, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class CleanPartitionMetadata(_Record):
    partition_path: str
    policy: str
    delete_path_patterns: list[str] = field(default_factory=list)
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    is_partition_deleted: bool | None = False


@dataclass(kw_only=True)
class CleanMetadata(_Record):
    """Content of a completed ``<T>.clean``."""

    schema_name: ClassVar[str] = _full("HoodieCleanMetadata")

    start_clean_time: str
    time_taken_in_millis: int
    total_files_deleted: int
    earliest_commit_to_retain: str
    last_completed_commit_timestamp: str = ""
    partition_metadata: dict[str, CleanPartitionMetadata] = _nested("map", CleanPartitionMetadata, default_factory=dict)
    version: int | None = 2
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] = _nested(
        "map", CleanPartitionMetadata, default_factory=dict
    )
    extra_metadata: dict[str, str] = field(default_factory=dict)


@_names_the_file
def parse_cleaner_plan(data: bytes) -> CleanerPlan:
    return _parse(CleanerPlan, data)


def serialize_cleaner_plan(plan: CleanerPlan) -> bytes:
    return _serialize(plan)


@_names_the_file
def parse_clean_metadata(data: bytes) -> CleanMetadata:
    return _parse(CleanMetadata, data)


@_names_the_file
def parse_clean_retention(data: bytes) -> tuple[str, dict[str, str]]:
    """A completed clean's earliest commit to retain and extra metadata, without converting its per-partition
    lists (what the next clean plan needs; the lists of a clean of thousands of partitions take a second)."""
    name, record = parse_any_avro(data)
    if name != CleanMetadata.schema_name:
        raise MetadataFormatError(f"expected {CleanMetadata.schema_name}, found {name}")
    earliest, extra = record.get("earliestCommitToRetain"), record.get("extraMetadata")
    if not isinstance(earliest, str) or not isinstance(extra, dict | None):
        raise MetadataFormatError("malformed CleanMetadata: earliestCommitToRetain or extraMetadata")
    return earliest, dict(extra or {})


def serialize_clean_metadata(meta: CleanMetadata) -> bytes:
    return _serialize(meta)


# --- rollback -----------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class InstantInfo(_Record):
    commit_time: str
    action: str


@dataclass(kw_only=True)
class RollbackRequest(_Record):
    """Files to delete, or log files to append a rollback command block to, for one file group."""

    partition_path: str
    file_id: str | None = None
    latest_base_instant: str | None = None
    files_to_be_deleted: list[str] = field(default_factory=list)  # absolute paths
    log_blocks_to_be_deleted: dict[str, int] = field(default_factory=dict)  # log file path -> size


@dataclass(kw_only=True)
class RollbackPlan(_Record):
    """Content of ``<T>.rollback.requested``."""

    schema_name: ClassVar[str] = _full("HoodieRollbackPlan")

    instant_to_rollback: InstantInfo | None = _nested("one", InstantInfo, default=None)
    rollback_requests: list[RollbackRequest] = field(
        default_factory=list, metadata={"nested": ("list", RollbackRequest), "avro": "RollbackRequests"}
    )
    version: int | None = 1


@dataclass(kw_only=True)
class RollbackPartitionMetadata(_Record):
    partition_path: str
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    rollback_log_files: dict[str, int] = field(default_factory=dict)
    log_files_from_failed_commit: dict[str, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class RollbackMetadata(_Record):
    """Content of a completed ``<T>.rollback`` (its ``.rollback.inflight`` is empty)."""

    schema_name: ClassVar[str] = _full("HoodieRollbackMetadata")

    start_rollback_time: str
    time_taken_in_millis: int
    total_files_deleted: int
    commits_rollback: list[str] = field(default_factory=list)
    partition_metadata: dict[str, RollbackPartitionMetadata] = _nested(
        "map", RollbackPartitionMetadata, default_factory=dict
    )
    version: int | None = 1
    instants_rollback: list[InstantInfo] = _nested("list", InstantInfo, default_factory=list)


@_names_the_file
def parse_rollback_plan(data: bytes) -> RollbackPlan:
    return _parse(RollbackPlan, data)


def serialize_rollback_plan(plan: RollbackPlan) -> bytes:
    return _serialize(plan)


@_names_the_file
def parse_rollback_metadata(data: bytes) -> RollbackMetadata:
    return _parse(RollbackMetadata, data)


def serialize_rollback_metadata(meta: RollbackMetadata) -> bytes:
    return _serialize(meta)


# --- savepoint and restore ----------------------------------------------------------------------------------


@dataclass(kw_only=True)
class SavepointPartitionMetadata(_Record):
    partition_path: str
    savepoint_data_file: list[str] = field(default_factory=list)  # file names the savepoint keeps


@dataclass(kw_only=True)
class SavepointMetadata(_Record):
    """Content of a completed ``<T>.savepoint`` (its ``.savepoint.inflight`` is empty)."""

    schema_name: ClassVar[str] = _full("HoodieSavepointMetadata")

    savepointed_by: str
    savepointed_at: int            # epoch milliseconds (System.currentTimeMillis in Java)
    comments: str
    partition_metadata: dict[str, SavepointPartitionMetadata] = _nested(
        "map", SavepointPartitionMetadata, default_factory=dict
    )
    version: int | None = 1


@dataclass(kw_only=True)
class RestorePlan(_Record):
    """Content of ``<T>.restore.requested``: the instants to roll back, newest first."""

    schema_name: ClassVar[str] = _full("HoodieRestorePlan")

    instants_to_rollback: list[InstantInfo] = _nested("list", InstantInfo, default_factory=list)
    version: int | None = 2
    savepoint_to_restore_timestamp: str | None = None


@dataclass(kw_only=True)
class RestoreMetadata(_Record):
    """Content of a completed ``<T>.restore``: the metadata of each rollback, by the instant rolled back."""

    schema_name: ClassVar[str] = _full("HoodieRestoreMetadata")

    start_restore_time: str
    time_taken_in_millis: int
    instants_to_rollback: list[str] = field(default_factory=list)
    hoodie_restore_metadata: dict[str, list[RollbackMetadata]] = _nested(
        "map_list", RollbackMetadata, default_factory=dict
    )
    version: int | None = 1
    restore_instant_info: list[InstantInfo] = _nested("list", InstantInfo, default_factory=list)
    extra_metadata: dict[str, str] | None = None


@_names_the_file
def parse_savepoint_metadata(data: bytes) -> SavepointMetadata:
    return _parse(SavepointMetadata, data)


def serialize_savepoint_metadata(meta: SavepointMetadata) -> bytes:
    return _serialize(meta)


@_names_the_file
def parse_restore_plan(data: bytes) -> RestorePlan:
    return _parse(RestorePlan, data)


def serialize_restore_plan(plan: RestorePlan) -> bytes:
    return _serialize(plan)


@_names_the_file
def parse_restore_metadata(data: bytes) -> RestoreMetadata:
    return _parse(RestoreMetadata, data)


def serialize_restore_metadata(meta: RestoreMetadata) -> bytes:
    return _serialize(meta)


# --- indexing -----------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class IndexPartitionInfo(_Record):
    """One metadata-table partition an `indexing` instant builds, and the data instant it is built up to."""

    version: int | None = 1
    metadata_partition_path: str | None = None
    index_upto_instant: str | None = None


@dataclass(kw_only=True)
class IndexPlan(_Record):
    """Content of ``<T>.indexing.requested`` (and of its ``.indexing.inflight``)."""

    schema_name: ClassVar[str] = _full("HoodieIndexPlan")

    version: int | None = 1
    index_partition_infos: list[IndexPartitionInfo] = _nested("list", IndexPartitionInfo, default_factory=list)


@dataclass(kw_only=True)
class IndexCommitMetadata(_Record):
    """Content of a completed ``<T>.indexing``."""

    schema_name: ClassVar[str] = _full("HoodieIndexCommitMetadata")

    version: int | None = 1
    operation_type: str | None = None
    index_partition_infos: list[IndexPartitionInfo] = _nested("list", IndexPartitionInfo, default_factory=list)


@_names_the_file
def parse_index_plan(data: bytes) -> IndexPlan:
    return _parse(IndexPlan, data)


def serialize_index_plan(plan: IndexPlan) -> bytes:
    return _serialize(plan)


@_names_the_file
def parse_index_commit_metadata(data: bytes) -> IndexCommitMetadata:
    return _parse(IndexCommitMetadata, data)


def serialize_index_commit_metadata(meta: IndexCommitMetadata) -> bytes:
    return _serialize(meta)
