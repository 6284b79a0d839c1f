"""The table's concurrency-control options, in Hudi's names and with Hudi's defaults: which lock provider the
writers use (`hoodie.write.lock.provider` and its `hoodie.write.lock.*` options), the concurrency mode, and the
clock skew instant times wait out. TMS takes part only in providers it can share with Java writers; the others
are refused with one clear line, never replaced by a lock the writers do not see."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ..config import write as write_config
from ..errors import LockConfigError

LOCK_PREFIX = write_config.LOCK_PREFIX
PROVIDER = write_config.LOCK_PROVIDER.key
CONCURRENCY_MODE = write_config.CONCURRENCY_MODE.key
CLOCK_SKEW_MS = write_config.MAX_CLOCK_SKEW_MS.key
TIME_GENERATOR_TYPE = write_config.TIME_GENERATOR_TYPE.key
CONFLICT_STRATEGY = write_config.CONFLICT_STRATEGY.key

_LOCK_PACKAGE = "org.apache.hudi.client.transaction.lock."
ZOOKEEPER = _LOCK_PACKAGE + "ZookeeperBasedLockProvider"
FILESYSTEM = _LOCK_PACKAGE + "FileSystemBasedLockProvider"
STORAGE = _LOCK_PACKAGE + "StorageBasedLockProvider"
SUPPORTED_PROVIDERS = (ZOOKEEPER, FILESYSTEM, STORAGE)
# Providers Java writers may use that TMS cannot share, and why.
REFUSED_PROVIDERS = {
    _LOCK_PACKAGE + "InProcessLockProvider": "it locks within one JVM, so a writer's lock never excludes TMS",
    _LOCK_PACKAGE + "LocalProcessLockProvider": "it locks within one JVM, so a writer's lock never excludes TMS",
    _LOCK_PACKAGE + "NoopLockProvider": "it takes no lock at all",
    "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider": "TMS does not implement DynamoDB locks yet",
    "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider":
        "TMS does not implement Hive Metastore locks yet",
    _LOCK_PACKAGE + "ZookeeperBasedImplicitBasePathLockProvider":
        "TMS does not derive the implicit ZooKeeper lock path yet; use ZookeeperBasedLockProvider with an explicit "
        "base_path and lock_key",
}
SIMPLE_CONFLICT_STRATEGY = write_config.CONFLICT_STRATEGY.default


class ConcurrencyMode(StrEnum):
    SINGLE_WRITER = "SINGLE_WRITER"
    OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"
    NON_BLOCKING_CONCURRENCY_CONTROL = "NON_BLOCKING_CONCURRENCY_CONTROL"


@dataclass(frozen=True)
class LockRetries:
    """Hudi's LockManager: `client.num_retries` more attempts of `wait_time_ms` each at the provider, with
    `client.wait_time_ms_between_retry` between them; `num_retries`, `wait_time_ms_between_retry` and
    `max_wait_time_ms_between_retry` bound the provider's own retries (ZooKeeper's connection)."""
    wait_time_ms: int = 60_000
    client_num_retries: int = 50
    client_wait_time_ms_between_retry: int = 5_000
    num_retries: int = 15
    wait_time_ms_between_retry: int = 1_000
    max_wait_time_ms_between_retry: int = 16_000


@dataclass(frozen=True)
class ZookeeperLockOptions:
    connect_string: str
    base_path: str
    lock_key: str
    session_timeout_ms: int = 60_000
    connection_timeout_ms: int = 15_000

    @property
    def lock_path(self) -> str:
        """The mutex's znode: `base_path/lock_key`, as Hudi's ZookeeperBasedLockProvider builds it."""
        return self.base_path.rstrip("/") + "/" + self.lock_key


@dataclass(frozen=True)
class FileSystemLockOptions:
    lock_dir: str          # the folder holding the `lock` file (default: the table's `.hoodie`)
    expire_minutes: int = 0  # 0: never expires


@dataclass(frozen=True)
class StorageLockOptions:
    lock_file: str         # `<base>/.hoodie/.locks/table_lock.json`
    validity_timeout_secs: int = 300
    heartbeat_poll_secs: int = 30


@dataclass(frozen=True)
class ConcurrencyConfig:
    """What a writer or TMS process needs to take part in the table's concurrency control."""
    mode: ConcurrencyMode = ConcurrencyMode.SINGLE_WRITER
    provider: str | None = None
    zookeeper: ZookeeperLockOptions | None = None
    filesystem: FileSystemLockOptions | None = None
    storage: StorageLockOptions | None = None
    retries: LockRetries = field(default_factory=LockRetries)
    max_clock_skew_ms: int = 0
    options: tuple[tuple[str, str], ...] = ()  # the options as given (what is stored and shown)

    @property
    def has_lock(self) -> bool:
        return self.provider is not None

    @property
    def multi_writer(self) -> bool:
        return self.mode is not ConcurrencyMode.SINGLE_WRITER

    @property
    def non_blocking(self) -> bool:
        return self.mode is ConcurrencyMode.NON_BLOCKING_CONCURRENCY_CONTROL


def is_concurrency_option(key: str) -> bool:
    """Whether `key` belongs to the table's concurrency control (and so to this parser)."""
    return key.startswith(LOCK_PREFIX) or key in (CONCURRENCY_MODE, CLOCK_SKEW_MS, TIME_GENERATOR_TYPE)


_KNOWN = {option.key for option in write_config.CONCURRENCY_OPTIONS}


def parse_concurrency_options(options: Mapping[str, str], *, base_path: str, table_name: str) -> ConcurrencyConfig:
    """Validate the table's concurrency options (Hudi names, string values) into a ConcurrencyConfig.
    Raises LockConfigError, one line, for an unknown option, a refused provider or a bad value."""
    opts = {k.strip(): str(v).strip() for k, v in options.items()}
    unknown = sorted(k for k in opts if k not in _KNOWN)
    if unknown:
        raise LockConfigError(f"unknown concurrency option {unknown[0]} (TMS knows hoodie.write.lock.provider and "
                              "the zookeeper, filesystem and storage lock options)")
    try:
        mode = ConcurrencyMode(write_config.CONCURRENCY_MODE.value(opts).upper())
    except ValueError:
        raise LockConfigError(f"{CONCURRENCY_MODE}={opts[CONCURRENCY_MODE]} is not one of "
                              f"{', '.join(m.value for m in ConcurrencyMode)}") from None
    if write_config.TIME_GENERATOR_TYPE.value(opts) != "WAIT_TO_ADJUST_SKEW":
        raise LockConfigError(f"{TIME_GENERATOR_TYPE} must be WAIT_TO_ADJUST_SKEW (Hudi's only time generator)")
    if write_config.CONFLICT_STRATEGY.value(opts) != SIMPLE_CONFLICT_STRATEGY:
        raise LockConfigError(f"{CONFLICT_STRATEGY}={opts[CONFLICT_STRATEGY]}: TMS checks conflicts as "
                              "SimpleConcurrentFileWritesConflictResolutionStrategy only")
    provider = write_config.LOCK_PROVIDER.value(opts)
    if provider is None:
        if mode is not ConcurrencyMode.SINGLE_WRITER:
            raise LockConfigError(f"{CONCURRENCY_MODE}={mode.value} needs {PROVIDER}: set the provider the writers use")
        lock_opts = sorted(k for k in opts if k.startswith(LOCK_PREFIX))
        if lock_opts:
            raise LockConfigError(f"{lock_opts[0]} is set but {PROVIDER} is not")
        return ConcurrencyConfig(mode=mode, options=tuple(sorted(opts.items())))
    if provider in REFUSED_PROVIDERS:
        raise LockConfigError(f"{PROVIDER}={provider} is refused: {REFUSED_PROVIDERS[provider]}")
    if provider not in SUPPORTED_PROVIDERS:
        raise LockConfigError(f"{PROVIDER}={provider} is not a lock provider TMS can share with the writers "
                              f"(one of {', '.join(p.rsplit('.', 1)[1] for p in SUPPORTED_PROVIDERS)})")
    retries = LockRetries(
        wait_time_ms=write_config.LOCK_WAIT_TIME_MS.value(opts),
        client_num_retries=write_config.LOCK_CLIENT_NUM_RETRIES.value(opts),
        client_wait_time_ms_between_retry=write_config.LOCK_CLIENT_WAIT_TIME_MS_BETWEEN_RETRY.value(opts),
        num_retries=write_config.LOCK_NUM_RETRIES.value(opts),
        wait_time_ms_between_retry=write_config.LOCK_WAIT_TIME_MS_BETWEEN_RETRY.value(opts),
        max_wait_time_ms_between_retry=write_config.LOCK_MAX_WAIT_TIME_MS_BETWEEN_RETRY.value(opts))
    base = base_path.rstrip("/")
    zookeeper = filesystem = storage = None
    if provider == ZOOKEEPER:
        zookeeper = _zookeeper(opts, table_name)
    elif provider == FILESYSTEM:
        filesystem = FileSystemLockOptions(
            lock_dir=(write_config.FILESYSTEM_LOCK_PATH.value(opts) or f"{base}/.hoodie").rstrip("/"),
            expire_minutes=write_config.FILESYSTEM_LOCK_EXPIRE_MINUTES.value(opts))
    else:
        validity = write_config.STORAGE_LOCK_VALIDITY_TIMEOUT_SECS.value(opts)
        poll = write_config.STORAGE_LOCK_HEARTBEAT_POLL_SECS.value(opts)
        if validity < 10 * poll:
            raise LockConfigError(f"{write_config.STORAGE_LOCK_VALIDITY_TIMEOUT_SECS.key} must be at least 10x "
                                  f"{write_config.STORAGE_LOCK_HEARTBEAT_POLL_SECS.key} (as Hudi requires)")
        storage = StorageLockOptions(lock_file=f"{base}/.hoodie/.locks/table_lock.json",
                                     validity_timeout_secs=validity, heartbeat_poll_secs=poll)
    return ConcurrencyConfig(mode=mode, provider=provider, zookeeper=zookeeper, filesystem=filesystem,
                             storage=storage, retries=retries, options=tuple(sorted(opts.items())),
                             max_clock_skew_ms=write_config.MAX_CLOCK_SKEW_MS.value(opts))


def _zookeeper(opts: dict[str, str], table_name: str) -> ZookeeperLockOptions:
    url = write_config.ZOOKEEPER_URL.value(opts)
    base_path = write_config.ZOOKEEPER_BASE_PATH.value(opts)
    if not url:
        raise LockConfigError(f"{PROVIDER}=ZookeeperBasedLockProvider needs {write_config.ZOOKEEPER_URL.key}")
    if not base_path:
        raise LockConfigError(f"{PROVIDER}=ZookeeperBasedLockProvider needs {write_config.ZOOKEEPER_BASE_PATH.key}")
    if not base_path.startswith("/"):
        raise LockConfigError(f"{write_config.ZOOKEEPER_BASE_PATH.key}={base_path} must be an absolute znode path")
    port = write_config.ZOOKEEPER_PORT.value(opts)
    if port is not None and not port.isdigit():
        raise LockConfigError(f"{write_config.ZOOKEEPER_PORT.key}={port} is not a port number")
    # Hudi's provider (0.15 to 1.1) hands the url to Curator as its connect string and never reads the port: a
    # host that names no port is ZooKeeper's default 2181 there, and must be here, or TMS and Java writers would
    # lock on different servers.
    connect = ",".join(h.strip() for h in url.split(",") if h.strip())
    lock_key = write_config.ZOOKEEPER_LOCK_KEY.value(opts) or table_name
    if not re.fullmatch(r"[^/\s]+", lock_key):
        raise LockConfigError(f"{write_config.ZOOKEEPER_LOCK_KEY.key}={lock_key} must be one znode name")
    return ZookeeperLockOptions(
        connect_string=connect, base_path=base_path, lock_key=lock_key,
        session_timeout_ms=write_config.ZOOKEEPER_SESSION_TIMEOUT_MS.value(opts),
        connection_timeout_ms=write_config.ZOOKEEPER_CONNECTION_TIMEOUT_MS.value(opts))
