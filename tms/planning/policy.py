"""A table's policy: when and how TMS runs its table services, in Hudi's own option names and
defaults. Stored as JSON on the table row (only the options an admin set); read with defaults."""
from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tms.hudi.config import write as write_config
from tms.planning.cron import parse_schedule

COMPACTION_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."


class TriggerStrategy(StrEnum):
    NUM_COMMITS = "NUM_COMMITS"
    NUM_COMMITS_AFTER_LAST_REQUEST = "NUM_COMMITS_AFTER_LAST_REQUEST"
    TIME_ELAPSED = "TIME_ELAPSED"
    NUM_AND_TIME = "NUM_AND_TIME"
    NUM_OR_TIME = "NUM_OR_TIME"


class CompactionStrategy(StrEnum):
    LOG_FILE_SIZE = COMPACTION_STRATEGY_PACKAGE + "LogFileSizeBasedCompactionStrategy"
    BOUNDED_IO = COMPACTION_STRATEGY_PACKAGE + "BoundedIOCompactionStrategy"
    UNBOUNDED = COMPACTION_STRATEGY_PACKAGE + "UnBoundedCompactionStrategy"
    LOG_FILE_NUM = COMPACTION_STRATEGY_PACKAGE + "LogFileNumBasedCompactionStrategy"
    DAY_BASED = COMPACTION_STRATEGY_PACKAGE + "DayBasedCompactionStrategy"


class CleanerPolicy(StrEnum):
    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


class PartitionTtlStrategy(StrEnum):
    """Hudi's partition TTL strategies TMS runs (Hudi's KEEP_BY_CREATION_TIME needs partition creation
    times TMS does not keep)."""

    KEEP_BY_TIME = "KEEP_BY_TIME"


MB = 1024 * 1024
# The policy options whose values are sizes: in bytes, or in megabytes (Hudi's hoodie.compaction.target.io).
BYTE_SIZE_OPTIONS = frozenset({
    "hoodie.compaction.logfile.size.threshold", "hoodie.parquet.max.file.size",
    "hoodie.clustering.plan.strategy.small.file.limit", "hoodie.clustering.plan.strategy.max.bytes.per.group",
    "hoodie.clustering.plan.strategy.target.file.max.bytes", "hoodie.memory.compaction.max.size"})
MEGABYTE_SIZE_OPTIONS = frozenset({"hoodie.compaction.target.io"})
# The options by which a Hudi writer asks for clustering (TablePolicy attribute names).
CLUSTERING_SWITCHES = ("clustering_async_enabled", "clustering_inline", "clustering_schedule_inline")


class TablePolicy(BaseModel):
    """Set and stored by Hudi option name; read in code by attribute (`policy.max_delta_commits`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trigger_strategy: TriggerStrategy = Field(
        TriggerStrategy(write_config.COMPACTION_TRIGGER_STRATEGY.default),
        alias=write_config.COMPACTION_TRIGGER_STRATEGY.key)
    max_delta_commits: int = Field(
        write_config.COMPACTION_MAX_DELTA_COMMITS.default, ge=1, alias=write_config.COMPACTION_MAX_DELTA_COMMITS.key)
    max_delta_seconds: int = Field(3600, ge=1, alias="hoodie.compact.inline.max.delta.seconds")
    # A compaction plan still waiting for a worker (requested, not started) holds back the next one, so a
    # backlog of plans cannot grow faster than workers serve it; true plans the next one anyway (its file
    # groups are those the waiting plan does not hold), as Hudi's own scheduler does.
    compaction_plan_while_pending: bool = Field(False, alias="tms.compaction.plan.while.pending")
    compaction_strategy: CompactionStrategy = Field(
        CompactionStrategy.LOG_FILE_SIZE, alias="hoodie.compaction.strategy")
    compaction_target_io_mb: int = Field(500 * 1024, ge=1, alias="hoodie.compaction.target.io")
    compaction_day_based_partitions: int = Field(
        10, ge=1, alias="hoodie.compaction.daybased.target.partitions")
    compaction_log_file_size_threshold: int = Field(
        0, ge=0, alias="hoodie.compaction.logfile.size.threshold")
    compaction_log_file_num_threshold: int = Field(0, ge=0, alias="hoodie.compaction.logfile.num.threshold")
    # Hudi sizes a slice without a base file (and its compaction output) as one full parquet file.
    parquet_max_file_size: int = Field(write_config.PARQUET_MAX_FILE_SIZE.default, ge=1,
                                       alias=write_config.PARQUET_MAX_FILE_SIZE.key)
    clustering_small_file_limit: int = Field(
        300 * MB, ge=0, alias="hoodie.clustering.plan.strategy.small.file.limit")
    clustering_max_bytes_per_group: int = Field(
        2048 * MB, ge=1, alias="hoodie.clustering.plan.strategy.max.bytes.per.group")
    clustering_target_file_max_bytes: int = Field(
        1024 * MB, ge=1, alias="hoodie.clustering.plan.strategy.target.file.max.bytes")
    clustering_max_num_groups: int = Field(30, ge=1, alias="hoodie.clustering.plan.strategy.max.num.groups")
    clustering_sort_columns: str = Field(
        "", pattern=r"^[^\x00]*$", alias="hoodie.clustering.plan.strategy.sort.columns")
    clustering_single_group: bool = Field(
        True, alias="hoodie.clustering.plan.strategy.single.group.clustering.enabled")
    clustering_max_commits: int = Field(4, ge=1, alias="hoodie.clustering.async.max.commits")
    # Whether the table's clustering is asked for, as a Hudi writer asks for it (off by default, as in Hudi):
    # any of the three set true asks for it; set only false, they turn it off (see `clustering_asked`).
    clustering_async_enabled: bool = Field(False, alias="hoodie.clustering.async.enabled")
    clustering_inline: bool = Field(False, alias="hoodie.clustering.inline")
    clustering_schedule_inline: bool = Field(False, alias="hoodie.clustering.schedule.inline")
    # The memory budget of the table's compactions and clusterings (bytes; log records past it spill to local
    # disk) and the jobs' memory sized from it; 0: the worker's TMS_MERGE_MEMORY_BYTES.
    merge_memory_bytes: int = Field(0, ge=0, alias="hoodie.memory.compaction.max.size")
    cleaner_policy: CleanerPolicy = Field(CleanerPolicy.KEEP_LATEST_COMMITS, alias="hoodie.cleaner.policy")
    cleaner_commits_retained: int = Field(10, ge=1, alias="hoodie.cleaner.commits.retained")
    cleaner_file_versions_retained: int = Field(3, ge=1, alias="hoodie.cleaner.fileversions.retained")
    cleaner_hours_retained: int = Field(24, ge=1, alias="hoodie.cleaner.hours.retained")
    # Clean planning looks only at the partitions the commits since the last clean touched, as Hudi's does.
    cleaner_incremental: bool = Field(True, alias="hoodie.cleaner.incremental.mode")
    # At most this many files per clean plan (0: no bound); the next plan continues where one stopped.
    clean_max_files_per_plan: int = Field(100_000, ge=0, alias="tms.clean.max.files.per.plan")
    heartbeat_interval_ms: int = Field(60_000, ge=1, alias="hoodie.client.heartbeat.interval_in_ms")
    heartbeat_tolerable_misses: int = Field(2, ge=0, alias="hoodie.client.heartbeat.tolerable.misses")
    # Writers with Hudi's EAGER failed-writes policy keep no heartbeat: TMS presumes such a pending
    # write failed once its instant files have not changed for this long.
    rollback_no_heartbeat_age_seconds: int = Field(3600, ge=1, alias="tms.rollback.no.heartbeat.age.seconds")
    # The freshness objective: no delta commit stays uncompacted longer than this (0: none). The manager warns
    # (`freshness_at_risk`) when the forecast says the objective will be missed, before it is.
    freshness_max_uncompacted_seconds: int = Field(0, ge=0, alias="tms.freshness.max.uncompacted.seconds")
    # Record TTL (tables not partitioned by time): records whose `ttl_field` is older than `ttl_days` are
    # dropped by compaction and clustering, and deleted by the TTL task (ttl.py). Both or neither.
    ttl_field: str = Field("", pattern=r"^[^\x00,]*$", alias="tms.ttl.field")
    ttl_days: int = Field(0, ge=0, alias="tms.ttl.days")
    # Partition TTL, as Hudi's: partitions older than `partition_ttl_days` (-1: off) are deleted, at most
    # `partition_ttl_max_partitions` per run.
    partition_ttl_strategy: PartitionTtlStrategy = Field(
        PartitionTtlStrategy.KEEP_BY_TIME, alias="hoodie.partition.ttl.strategy.type")
    partition_ttl_days: int = Field(-1, ge=-1, alias="hoodie.partition.ttl.days.retain")
    partition_ttl_max_partitions: int = Field(
        1000, ge=1, alias="hoodie.partition.ttl.management.max.partitions.to.delete")
    # How often the manager's leader requests each TTL task the two above set (tms.planning.ttl_schedule).
    ttl_interval_hours: int = Field(24, ge=1, alias="tms.ttl.interval.hours")
    # Savepoints TMS makes (tms.planning.savepoints): one of the latest completed write every this many hours
    # (0: none), the oldest of its own beyond `keep` deleted (a writer's savepoints are never touched).
    savepoint_interval_hours: int = Field(0, ge=0, alias="tms.savepoint.interval.hours")
    savepoint_keep: int = Field(7, ge=1, alias="tms.savepoint.keep")
    # Archival of the active timeline (tms.hudi.table.archival), as Hudi's writers read these: past `keep.max`
    # completed commits the oldest go down to `keep.min`; automatic=false: archived only on request (`tms trigger
    # --service archive`); `async` changes nothing in TMS (its archival always runs as a task of its own, apart
    # from the writers' commits), accepted so that a writer's options can be given as they are.
    archive_min_commits: int = Field(write_config.KEEP_MIN_COMMITS.default, ge=1,
                                     alias=write_config.KEEP_MIN_COMMITS.key)
    archive_max_commits: int = Field(write_config.KEEP_MAX_COMMITS.default, ge=2,
                                     alias=write_config.KEEP_MAX_COMMITS.key)
    archive_automatic: bool = Field(True, alias="hoodie.archive.automatic")
    archive_async: bool = Field(False, alias="hoodie.archive.async")
    archive_beyond_savepoint: bool = Field(write_config.ARCHIVE_BEYOND_SAVEPOINT.default,
                                           alias=write_config.ARCHIVE_BEYOND_SAVEPOINT.key)
    timeline_compaction_batch_size: int = Field(write_config.TIMELINE_COMPACTION_BATCH_SIZE.default, ge=2,
                                                alias=write_config.TIMELINE_COMPACTION_BATCH_SIZE.key)
    metadata_min_commits: int = Field(
        write_config.METADATA_KEEP_MIN_COMMITS.default, ge=1, alias=write_config.METADATA_KEEP_MIN_COMMITS.key)
    metadata_max_commits: int = Field(
        write_config.METADATA_KEEP_MAX_COMMITS.default, ge=2, alias=write_config.METADATA_KEEP_MAX_COMMITS.key)
    metadata_compact_max_delta_commits: int = Field(
        write_config.METADATA_COMPACT_MAX_DELTA_COMMITS.default, ge=1,
        alias=write_config.METADATA_COMPACT_MAX_DELTA_COMMITS.key)
    # Backups (tms.backup): where versions go ("": none), when ("daily", "hourly" or a cron expression, UTC),
    # how many are kept, and how long a due backup may take before `backup_missed` fires.
    backup_destination: str = Field("", pattern=r"^[^\x00]*$", alias="tms.backup.destination")
    backup_schedule: str = Field("daily", pattern=r"^[^\x00]*$", alias="tms.backup.schedule")
    backup_keep_versions: int = Field(7, ge=1, alias="tms.backup.keep.versions")
    backup_grace_seconds: int = Field(3 * 3600, ge=1, alias="tms.backup.grace.seconds")

    @field_validator("compaction_strategy", mode="before")
    @classmethod
    def _qualify_strategy(cls, value: Any) -> Any:
        # Accept the simple class name users often write, as Hudi's docs do.
        if isinstance(value, str) and "." not in value:
            return COMPACTION_STRATEGY_PACKAGE + value
        return value

    @model_validator(mode="after")
    def _ttl_complete(self) -> TablePolicy:
        if bool(self.ttl_field) != bool(self.ttl_days):
            raise ValueError("tms.ttl.field and tms.ttl.days are set together (a field and a number of days > 0)")
        return self

    @model_validator(mode="after")
    def _archive_limits(self) -> TablePolicy:
        for low, high, lo, hi in (("hoodie.keep.min.commits", "hoodie.keep.max.commits", self.archive_min_commits,
                                   self.archive_max_commits),
                                  ("hoodie.metadata.keep.min.commits", "hoodie.metadata.keep.max.commits",
                                   self.metadata_min_commits, self.metadata_max_commits)):
            if hi <= lo:
                raise ValueError(f"{high} ({hi}) must be greater than {low} ({lo})")
        return self

    @property
    def record_ttl(self) -> bool:
        return bool(self.ttl_field and self.ttl_days)

    @property
    def partition_ttl(self) -> bool:
        return self.partition_ttl_days > 0
    @field_validator("backup_schedule")
    @classmethod
    def _known_schedule(cls, value: str) -> str:
        parse_schedule(value)  # the one reading of a schedule
        return value

    @property
    def clustering_asked(self) -> bool | None:
        """Whether the policy (the table's own or its template's) asks for clustering: True when it sets any of
        `hoodie.clustering.async.enabled`, `hoodie.clustering.inline`, `hoodie.clustering.schedule.inline` true,
        False when it sets them false only, None when it sets none of them (TMS_PLANNER_SERVICES decides)."""
        set_values = [getattr(self, name) for name in CLUSTERING_SWITCHES if name in self.model_fields_set]
        return any(set_values) if set_values else None

    @property
    def sort_columns(self) -> list[str]:
        return [c.strip() for c in self.clustering_sort_columns.split(",") if c.strip()]

    @classmethod
    def from_stored(cls, stored: dict[str, Any] | None) -> TablePolicy:
        return cls.model_validate(stored or {})

    def options(self) -> dict[str, Any]:
        """Every option with its effective value, keyed by Hudi name."""
        return self.model_dump(mode="json", by_alias=True)

    def merged(self, changes: dict[str, Any]) -> TablePolicy:
        """This policy with `changes` (Hudi names) applied, a None value restoring the default."""
        combined = {**self.explicit(), **changes}
        return TablePolicy.model_validate({k: v for k, v in combined.items() if v is not None})

    def explicit(self) -> dict[str, Any]:
        """Only the options that were set explicitly: what is stored, so defaults can evolve."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
