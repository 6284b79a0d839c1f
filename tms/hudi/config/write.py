"""The writers' options the library reads (hudi-rs: `HudiWriteConfig`): archival and the compaction trigger it
waits for, and the concurrency control (lock provider, its options, the clock skew). Defaults are Hudi's."""
from __future__ import annotations

from ..errors import LockConfigError
from .option import HudiOption, boolean, integer, number_at_least, optional_text, text

# --- archival (HoodieArchivalConfig, HoodieCompactionConfig, HoodieMetadataConfig) -------------------------

KEEP_MIN_COMMITS: HudiOption[int] = HudiOption("hoodie.keep.min.commits", 20, integer, blank_is_unset=False)
KEEP_MAX_COMMITS: HudiOption[int] = HudiOption("hoodie.keep.max.commits", 30, integer, blank_is_unset=False)
TIMELINE_COMPACTION_BATCH_SIZE: HudiOption[int] = HudiOption("hoodie.timeline.compaction.batch.size", 10, integer,
                                                             blank_is_unset=False)
ARCHIVE_BEYOND_SAVEPOINT: HudiOption[bool] = HudiOption("hoodie.archive.beyond.savepoint", False, boolean,
                                                        blank_is_unset=False)
COMPACTION_TRIGGER_STRATEGY: HudiOption[str] = HudiOption("hoodie.compact.inline.trigger.strategy", "NUM_COMMITS",
                                                          text, blank_is_unset=False)
COMPACTION_MAX_DELTA_COMMITS: HudiOption[int] = HudiOption("hoodie.compact.inline.max.delta.commits", 5, integer,
                                                           blank_is_unset=False)
METADATA_ENABLED: HudiOption[bool] = HudiOption("hoodie.metadata.enable", True, boolean, blank_is_unset=False)
# Table version 6: the records an archive log block holds.
ARCHIVAL_BATCH_SIZE: HudiOption[int] = HudiOption("hoodie.commits.archival.batch", 10, integer,
                                                  blank_is_unset=False)
ARCHIVE_MERGE_ENABLED: HudiOption[bool] = HudiOption("hoodie.archive.merge.enable", False, boolean,
                                                     blank_is_unset=False)
METADATA_KEEP_MIN_COMMITS: HudiOption[int] = HudiOption("hoodie.metadata.keep.min.commits", 20, integer,
                                                        blank_is_unset=False)
METADATA_KEEP_MAX_COMMITS: HudiOption[int] = HudiOption("hoodie.metadata.keep.max.commits", 30, integer,
                                                        blank_is_unset=False)
CLEANER_COMMITS_RETAINED: HudiOption[int] = HudiOption("hoodie.cleaner.commits.retained", 10, integer,
                                                        blank_is_unset=False)
METADATA_COMPACT_MAX_DELTA_COMMITS: HudiOption[int] = HudiOption("hoodie.metadata.compact.max.delta.commits", 10,
                                                                 integer, blank_is_unset=False)

# --- concurrency control (HoodieLockConfig, HoodieWriteConfig) --------------------------------------------


def _lock_int(key: str, default: int, minimum: int) -> HudiOption[int]:
    """A lock option's whole number, at least `minimum` (LockConfigError otherwise)."""
    return HudiOption(key, default, number_at_least(int, minimum, error=LockConfigError, noun="a whole number"))


LOCK_PREFIX = "hoodie.write.lock."
LOCK_PROVIDER: HudiOption[str | None] = HudiOption("hoodie.write.lock.provider", None, optional_text)
# The mode and the two checks below read a blank value as set (and refuse it).
CONCURRENCY_MODE: HudiOption[str] = HudiOption("hoodie.write.concurrency.mode", "SINGLE_WRITER", text,
                                               blank_is_unset=False)
TIME_GENERATOR_TYPE: HudiOption[str] = HudiOption("hoodie.time.generator.type", "WAIT_TO_ADJUST_SKEW", text,
                                                  blank_is_unset=False)
CONFLICT_STRATEGY: HudiOption[str] = HudiOption(
    "hoodie.write.lock.conflict.resolution.strategy",
    "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy", text,
    blank_is_unset=False)
MAX_CLOCK_SKEW_MS = _lock_int("hoodie.time.generator.max_expected_clock_skew_ms", 200, 0)

LOCK_WAIT_TIME_MS = _lock_int("hoodie.write.lock.wait_time_ms", 60_000, 0)
LOCK_NUM_RETRIES = _lock_int("hoodie.write.lock.num_retries", 15, 0)
LOCK_CLIENT_NUM_RETRIES = _lock_int("hoodie.write.lock.client.num_retries", 50, 0)
LOCK_WAIT_TIME_MS_BETWEEN_RETRY = _lock_int("hoodie.write.lock.wait_time_ms_between_retry", 1_000, 0)
LOCK_MAX_WAIT_TIME_MS_BETWEEN_RETRY = _lock_int("hoodie.write.lock.max_wait_time_ms_between_retry", 16_000, 0)
LOCK_CLIENT_WAIT_TIME_MS_BETWEEN_RETRY = _lock_int("hoodie.write.lock.client.wait_time_ms_between_retry", 5_000, 0)
# Known (writers set it) but not read: TMS's lock holders keep their own heartbeats.
LOCK_HEARTBEAT_INTERVAL_MS = _lock_int("hoodie.write.lock.heartbeat_interval_ms", 60_000, 0)

ZOOKEEPER_URL: HudiOption[str | None] = HudiOption("hoodie.write.lock.zookeeper.url", None, optional_text)
ZOOKEEPER_PORT: HudiOption[str | None] = HudiOption("hoodie.write.lock.zookeeper.port", None, optional_text,
                                                    blank_is_unset=False)  # checked, never used (see locks.config)
ZOOKEEPER_BASE_PATH: HudiOption[str | None] = HudiOption("hoodie.write.lock.zookeeper.base_path", None,
                                                         optional_text)
ZOOKEEPER_LOCK_KEY: HudiOption[str | None] = HudiOption("hoodie.write.lock.zookeeper.lock_key", None, optional_text)
ZOOKEEPER_SESSION_TIMEOUT_MS = _lock_int("hoodie.write.lock.zookeeper.session_timeout_ms", 60_000, 1)
ZOOKEEPER_CONNECTION_TIMEOUT_MS = _lock_int("hoodie.write.lock.zookeeper.connection_timeout_ms", 15_000, 1)

FILESYSTEM_LOCK_PATH: HudiOption[str | None] = HudiOption("hoodie.write.lock.filesystem.path", None, optional_text)
FILESYSTEM_LOCK_EXPIRE_MINUTES = _lock_int("hoodie.write.lock.filesystem.expire", 0, 0)

STORAGE_LOCK_VALIDITY_TIMEOUT_SECS = _lock_int("hoodie.write.lock.storage.validity.timeout.secs", 300, 10)
STORAGE_LOCK_HEARTBEAT_POLL_SECS = _lock_int("hoodie.write.lock.storage.heartbeat.poll.secs", 30, 1)

# Every concurrency option TMS knows (locks.config refuses any other).
CONCURRENCY_OPTIONS: tuple[HudiOption[int] | HudiOption[str] | HudiOption[str | None], ...] = (
    LOCK_PROVIDER, CONCURRENCY_MODE, TIME_GENERATOR_TYPE, CONFLICT_STRATEGY, MAX_CLOCK_SKEW_MS,
    LOCK_WAIT_TIME_MS, LOCK_NUM_RETRIES, LOCK_CLIENT_NUM_RETRIES, LOCK_WAIT_TIME_MS_BETWEEN_RETRY,
    LOCK_MAX_WAIT_TIME_MS_BETWEEN_RETRY, LOCK_CLIENT_WAIT_TIME_MS_BETWEEN_RETRY, LOCK_HEARTBEAT_INTERVAL_MS,
    ZOOKEEPER_URL, ZOOKEEPER_PORT, ZOOKEEPER_BASE_PATH, ZOOKEEPER_LOCK_KEY, ZOOKEEPER_SESSION_TIMEOUT_MS,
    ZOOKEEPER_CONNECTION_TIMEOUT_MS, FILESYSTEM_LOCK_PATH, FILESYSTEM_LOCK_EXPIRE_MINUTES,
    STORAGE_LOCK_VALIDITY_TIMEOUT_SECS, STORAGE_LOCK_HEARTBEAT_POLL_SECS)

# --- file sizing of TMS's writer (HoodieStorageConfig, HoodieCompactionConfig) ---------------------------

# TMS's writer routes no record to small files unless a limit is set (Hudi's writers default it to 100 MB).
PARQUET_SMALL_FILE_LIMIT: HudiOption[int] = HudiOption("hoodie.parquet.small.file.limit", 0,
                                                       number_at_least(int, 0), blank_is_unset=False)
PARQUET_MAX_FILE_SIZE: HudiOption[int] = HudiOption("hoodie.parquet.max.file.size", 120 * 1024 * 1024,
                                                    number_at_least(int, 1), blank_is_unset=False)
RECORD_SIZE_ESTIMATE: HudiOption[int] = HudiOption("hoodie.copyonwrite.record.size.estimate", 1024,
                                                   number_at_least(int, 1), blank_is_unset=False)
LOG_TO_PARQUET_RATIO: HudiOption[float] = HudiOption("hoodie.logfile.to.parquet.compression.ratio", 0.35,
                                                     number_at_least(float, 0), blank_is_unset=False)
