"""Hudi's LockManager: the table's lock provider, opened from the table's concurrency options, and taken with
Hudi's retries: up to `client.num_retries` more attempts of `wait_time_ms` each, `client.wait_time_ms_between_retry`
apart. A lock that cannot be taken is an error naming the lock and its holder."""
from __future__ import annotations

import logging
import time

from ..context import DEFAULT_CONTEXT, HudiContext
from .config import FILESYSTEM, STORAGE, ZOOKEEPER, ConcurrencyConfig
from .filesystem import FileSystemLockProvider
from .provider import LockError, LockProvider
from .storage_based import StorageLockProvider
from .zookeeper import ZookeeperLockProvider

log = logging.getLogger(__name__)


def open_lock_provider(config: ConcurrencyConfig, context: HudiContext = DEFAULT_CONTEXT) -> LockProvider:
    """The provider the table's writers use (config.provider must be set); a lock file is reached with the
    context's options for its store."""
    if config.provider == ZOOKEEPER and config.zookeeper is not None:
        return ZookeeperLockProvider(config.zookeeper, config.retries)
    if config.provider == FILESYSTEM and config.filesystem is not None:
        return FileSystemLockProvider(config.filesystem, context)
    if config.provider == STORAGE and config.storage is not None:
        return StorageLockProvider(config.storage, poll_seconds=config.retries.wait_time_ms_between_retry / 1000,
                                   context=context)
    raise LockError(f"no lock provider configured ({config.provider!r})")


class LockManager:
    def __init__(self, config: ConcurrencyConfig, provider: LockProvider | None = None,
                 context: HudiContext = DEFAULT_CONTEXT):
        self.config = config
        self.provider = provider or open_lock_provider(config, context)

    def lock(self) -> None:
        """Take the lock; an attempt that fails with an error (a lost connection) is retried like one that
        found the lock held, as Hudi's LockManager retries a HoodieLockException."""
        r = self.config.retries
        last_error: LockError | None = None
        for attempt in range(r.client_num_retries + 1):
            try:
                if self.provider.try_lock(r.wait_time_ms / 1000):
                    return
                last_error = None
            except LockError as e:
                last_error = e
            if attempt < r.client_num_retries:
                log.info("waiting for the table lock (%s), attempt %d", last_error or self.provider.describe(),
                         attempt + 1)
                time.sleep(r.client_wait_time_ms_between_retry / 1000)
        if last_error is not None:
            raise LockError(f"unable to acquire the table lock after {r.client_num_retries + 1} attempt(s): "
                            f"{last_error}")
        raise LockError(f"unable to acquire the table lock after {r.client_num_retries + 1} attempt(s): "
                        f"{self.provider.describe()}")

    def unlock(self) -> None:
        self.provider.unlock()

    def close(self) -> None:
        self.provider.close()
