"""The table's concurrency-control options, in Hudi's names and with Hudi's defaults: which lock provider the
writers use (`hoodie.write.lock.provider` and its `hoodie.write.lock.*` options), the concurrency mode, and the
clock skew instant times wait out. TMS takes part only in providers it can share with Java writers; the others
are refused with one clear line, never replaced by a lock the writers do not see."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ..errors import HudiConfigError

LOCK_PREFIX = "hoodie.write.lock."
PROVIDER = "hoodie.write.lock.provider"
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
CLOCK_SKEW_MS = "hoodie.time.generator.max_expected_clock_skew_ms"
TIME_GENERATOR_TYPE = "hoodie.time.generator.type"
CONFLICT_STRATEGY = "hoodie.write.lock.conflict.resolution.strategy"

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
SIMPLE_CONFLICT_STRATEGY = "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy"


class ConcurrencyMode(StrEnum):
    SINGLE_WRITER = "SINGLE_WRITER"
    OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"
    NON_BLOCKING_CONCURRENCY_CONTROL = "NON_BLOCKING_CONCURRENCY_CONTROL"


class LockConfigError(HudiConfigError):
    """Lock options TMS cannot honour: an unknown or refused provider, a missing or malformed option."""


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


_KNOWN = {
    PROVIDER, CONCURRENCY_MODE, CLOCK_SKEW_MS, TIME_GENERATOR_TYPE, CONFLICT_STRATEGY,
    "hoodie.write.lock.wait_time_ms", "hoodie.write.lock.num_retries", "hoodie.write.lock.client.num_retries",
    "hoodie.write.lock.wait_time_ms_between_retry", "hoodie.write.lock.max_wait_time_ms_between_retry",
    "hoodie.write.lock.client.wait_time_ms_between_retry", "hoodie.write.lock.heartbeat_interval_ms",
    "hoodie.write.lock.zookeeper.url", "hoodie.write.lock.zookeeper.port", "hoodie.write.lock.zookeeper.base_path",
    "hoodie.write.lock.zookeeper.lock_key", "hoodie.write.lock.zookeeper.session_timeout_ms",
    "hoodie.write.lock.zookeeper.connection_timeout_ms",
    "hoodie.write.lock.filesystem.path", "hoodie.write.lock.filesystem.expire",
    "hoodie.write.lock.storage.validity.timeout.secs", "hoodie.write.lock.storage.heartbeat.poll.secs",
}


def parse_concurrency_options(options: Mapping[str, str], *, base_path: str, table_name: str) -> ConcurrencyConfig:
    """Validate the table's concurrency options (Hudi names, string values) into a ConcurrencyConfig.
    Raises LockConfigError, one line, for an unknown option, a refused provider or a bad value."""
    opts = {k.strip(): str(v).strip() for k, v in options.items()}
    unknown = sorted(k for k in opts if k not in _KNOWN)
    if unknown:
        raise LockConfigError(f"unknown concurrency option {unknown[0]} (TMS knows hoodie.write.lock.provider and "
                              "the zookeeper, filesystem and storage lock options)")
    try:
        mode = ConcurrencyMode(opts.get(CONCURRENCY_MODE, ConcurrencyMode.SINGLE_WRITER.value).upper())
    except ValueError:
        raise LockConfigError(f"{CONCURRENCY_MODE}={opts[CONCURRENCY_MODE]} is not one of "
                              f"{', '.join(m.value for m in ConcurrencyMode)}") from None
    if opts.get(TIME_GENERATOR_TYPE, "WAIT_TO_ADJUST_SKEW") != "WAIT_TO_ADJUST_SKEW":
        raise LockConfigError(f"{TIME_GENERATOR_TYPE} must be WAIT_TO_ADJUST_SKEW (Hudi's only time generator)")
    if opts.get(CONFLICT_STRATEGY, SIMPLE_CONFLICT_STRATEGY) != SIMPLE_CONFLICT_STRATEGY:
        raise LockConfigError(f"{CONFLICT_STRATEGY}={opts[CONFLICT_STRATEGY]}: TMS checks conflicts as "
                              "SimpleConcurrentFileWritesConflictResolutionStrategy only")
    provider = opts.get(PROVIDER) or None
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
        wait_time_ms=_int(opts, "hoodie.write.lock.wait_time_ms", 60_000, minimum=0),
        client_num_retries=_int(opts, "hoodie.write.lock.client.num_retries", 50, minimum=0),
        client_wait_time_ms_between_retry=_int(opts, "hoodie.write.lock.client.wait_time_ms_between_retry", 5_000,
                                               minimum=0),
        num_retries=_int(opts, "hoodie.write.lock.num_retries", 15, minimum=0),
        wait_time_ms_between_retry=_int(opts, "hoodie.write.lock.wait_time_ms_between_retry", 1_000, minimum=0),
        max_wait_time_ms_between_retry=_int(opts, "hoodie.write.lock.max_wait_time_ms_between_retry", 16_000,
                                            minimum=0))
    base = base_path.rstrip("/")
    zookeeper = filesystem = storage = None
    if provider == ZOOKEEPER:
        zookeeper = _zookeeper(opts, table_name)
    elif provider == FILESYSTEM:
        filesystem = FileSystemLockOptions(
            lock_dir=(opts.get("hoodie.write.lock.filesystem.path") or f"{base}/.hoodie").rstrip("/"),
            expire_minutes=_int(opts, "hoodie.write.lock.filesystem.expire", 0, minimum=0))
    else:
        validity = _int(opts, "hoodie.write.lock.storage.validity.timeout.secs", 300, minimum=10)
        poll = _int(opts, "hoodie.write.lock.storage.heartbeat.poll.secs", 30, minimum=1)
        if validity < 10 * poll:
            raise LockConfigError("hoodie.write.lock.storage.validity.timeout.secs must be at least 10x "
                                  "hoodie.write.lock.storage.heartbeat.poll.secs (as Hudi requires)")
        storage = StorageLockOptions(lock_file=f"{base}/.hoodie/.locks/table_lock.json",
                                     validity_timeout_secs=validity, heartbeat_poll_secs=poll)
    return ConcurrencyConfig(mode=mode, provider=provider, zookeeper=zookeeper, filesystem=filesystem,
                             storage=storage, retries=retries, options=tuple(sorted(opts.items())),
                             max_clock_skew_ms=_int(opts, CLOCK_SKEW_MS, 200, minimum=0))


def _zookeeper(opts: dict[str, str], table_name: str) -> ZookeeperLockOptions:
    url = opts.get("hoodie.write.lock.zookeeper.url")
    base_path = opts.get("hoodie.write.lock.zookeeper.base_path")
    if not url:
        raise LockConfigError(f"{PROVIDER}=ZookeeperBasedLockProvider needs hoodie.write.lock.zookeeper.url")
    if not base_path:
        raise LockConfigError(f"{PROVIDER}=ZookeeperBasedLockProvider needs hoodie.write.lock.zookeeper.base_path")
    if not base_path.startswith("/"):
        raise LockConfigError(f"hoodie.write.lock.zookeeper.base_path={base_path} must be an absolute znode path")
    port = opts.get("hoodie.write.lock.zookeeper.port")
    if port is not None and not port.isdigit():
        raise LockConfigError(f"hoodie.write.lock.zookeeper.port={port} is not a port number")
    # Hudi's provider (0.15 to 1.1) hands the url to Curator as its connect string and never reads the port: a
    # host that names no port is ZooKeeper's default 2181 there, and must be here, or TMS and Java writers would
    # lock on different servers.
    connect = ",".join(h.strip() for h in url.split(",") if h.strip())
    lock_key = opts.get("hoodie.write.lock.zookeeper.lock_key") or table_name
    if not re.fullmatch(r"[^/\s]+", lock_key):
        raise LockConfigError(f"hoodie.write.lock.zookeeper.lock_key={lock_key} must be one znode name")
    return ZookeeperLockOptions(
        connect_string=connect, base_path=base_path, lock_key=lock_key,
        session_timeout_ms=_int(opts, "hoodie.write.lock.zookeeper.session_timeout_ms", 60_000, minimum=1),
        connection_timeout_ms=_int(opts, "hoodie.write.lock.zookeeper.connection_timeout_ms", 15_000, minimum=1))


def _int(opts: dict[str, str], key: str, default: int, *, minimum: int) -> int:
    raw = opts.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise LockConfigError(f"{key}={raw} is not a whole number") from None
    if value < minimum:
        raise LockConfigError(f"{key}={raw} must be at least {minimum}")
    return value
