"""Hudi 1.1's StorageBasedLockProvider: the lock is the JSON file `<base>/.hoodie/.locks/table_lock.json`
({"expired": bool, "validUntil": epoch ms, "owner": uuid}), changed only by conditional writes (the write
succeeds only if the file is still the version the writer read, or still absent). The holder renews
`validUntil` from a heartbeat thread every `heartbeat.poll.secs`; release writes `"expired": true`. A lock
whose `validUntil` passed (plus Hudi's 500 ms drift buffer) belongs to a dead holder and is taken over.

Conditional writes are the table storage's (Storage.replace_if): one conditional request on S3 and Azure Blob
storage (If-Match with the version read, If-None-Match: * to create), a hard link or an flock-guarded replace
on a local filesystem. GCS is refused (no conditional write proven against an endpoint here)."""
from __future__ import annotations

import json
import logging
import posixpath
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

from ..context import DEFAULT_CONTEXT, HudiContext
from ..storage.table_storage import has_conditional_writes
from .config import StorageLockOptions
from .provider import LockError

log = logging.getLogger(__name__)

CLOCK_DRIFT_BUFFER_MS = 500   # Hudi's: a lock is certainly expired this long after validUntil
ACQUIRE_POLL_SECONDS = 1.0    # Hudi's DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_IN_MILLIS between attempts


@dataclass(frozen=True)
class StorageLockData:
    expired: bool
    valid_until_ms: int
    owner: str

    def to_json(self) -> bytes:
        return json.dumps({"expired": self.expired, "validUntil": self.valid_until_ms, "owner": self.owner}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> StorageLockData:
        doc = json.loads(data)
        return cls(bool(doc["expired"]), int(doc["validUntil"]), str(doc["owner"]))


@dataclass(frozen=True)
class LockFileVersion:
    data: StorageLockData
    etag: str


class LockFileStore(Protocol):
    def read(self) -> LockFileVersion | None:
        """The lock file and its version tag, or None if there is none."""

    def write_if(self, data: StorageLockData, expected: LockFileVersion | None) -> LockFileVersion | None:
        """Write `data` if the file is still `expected` (absent if None); None if it changed meanwhile."""


class StorageLockFile:
    """The lock file through the table's storage: versioned reads and conditional writes (S3 If-Match /
    If-None-Match, Azure likewise, a local filesystem's hard link and flock: Storage.replace_if)."""

    def __init__(self, lock_file: str, context: HudiContext = DEFAULT_CONTEXT):
        folder, self.name = posixpath.split(lock_file.rstrip("/"))
        self.storage = context.open_storage(folder)

    def read(self) -> LockFileVersion | None:
        got = self.storage.read_versioned(self.name)
        if got is None:
            return None
        raw, version = got
        try:
            return LockFileVersion(StorageLockData.from_json(raw), version)
        except (ValueError, KeyError, TypeError):
            return None  # a torn or foreign file: as absent; a conditional write on it still needs its version

    def write_if(self, data: StorageLockData, expected: LockFileVersion | None) -> LockFileVersion | None:
        version = self.storage.replace_if(self.name, data.to_json(), None if expected is None else expected.etag)
        return None if version is None else LockFileVersion(data, version)


class StorageLockProvider:
    def __init__(self, options: StorageLockOptions, store: LockFileStore | None = None,
                 poll_seconds: float = ACQUIRE_POLL_SECONDS, context: HudiContext = DEFAULT_CONTEXT):
        """`poll_seconds`: between attempts while the lock is held by another owner (Hudi waits 1 s)."""
        if store is None:
            if not has_conditional_writes(options.lock_file):
                raise LockError(f"StorageBasedLockProvider on {options.lock_file}: TMS has conditional writes on "
                                "local filesystems, S3 and Azure Blob storage only; use the ZooKeeper lock on this "
                                "table")
            store = StorageLockFile(options.lock_file, context)
        self.options = options
        self.store = store
        self.poll_seconds = poll_seconds
        self.owner = str(uuid.uuid4())
        self._current: LockFileVersion | None = None
        self._guard = threading.RLock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    # --- the lock ----------------------------------------------------------------------------------
    def try_lock(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            if self._try_once():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(self.poll_seconds, max(0.0, deadline - time.monotonic())))

    def _try_once(self) -> bool:
        with self._guard:
            if self._current is not None:
                raise LockError(f"{self.describe()} is already held by this provider")
            latest = self.store.read()
            if latest is not None and self._still_valid(latest.data):
                return False
            taken = self.store.write_if(self._new_data(), latest)
            if taken is None or taken.data.owner != self.owner:
                return False
            self._current = taken
            self._start_heartbeat()
            return True

    def _new_data(self, expired: bool = False) -> StorageLockData:
        return StorageLockData(expired, int(time.time() * 1000) + self.options.validity_timeout_secs * 1000,
                               self.owner)

    @staticmethod
    def _still_valid(data: StorageLockData) -> bool:
        return not data.expired and int(time.time() * 1000) <= data.valid_until_ms + CLOCK_DRIFT_BUFFER_MS

    def unlock(self) -> None:
        self._stop_heartbeat()
        with self._guard:
            current, self._current = self._current, None
            if current is None:
                return
            released = self.store.write_if(StorageLockData(True, current.data.valid_until_ms, self.owner), current)
            if released is None:
                log.error("storage lock %s was taken by another owner before %s released it",
                          self.options.lock_file, self.owner)

    def close(self) -> None:
        self.unlock()

    def describe(self) -> str:
        latest = self.store.read()
        holder = f", held by {latest.data.owner}" if latest is not None and self._still_valid(latest.data) else ""
        return f"storage-based lock {self.options.lock_file}{holder}"

    # --- the heartbeat -----------------------------------------------------------------------------
    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._heartbeat = threading.Thread(target=self._renew_until_stopped, name=f"lock-heartbeat-{self.owner[:8]}",
                                           daemon=True)
        self._heartbeat.start()

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        beat, self._heartbeat = self._heartbeat, None
        if beat is not None and beat is not threading.current_thread():
            beat.join()

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.options.heartbeat_poll_secs):
            if not self.renew():
                return

    def renew(self) -> bool:
        """Extend the lock's validity (Hudi's renewLock); False once another owner has it."""
        with self._guard:
            if self._current is None or self._stop.is_set():
                return False
            renewed = self.store.write_if(self._new_data(), self._current)
            if renewed is None:
                log.error("storage lock %s: renewal failed, the lock was taken by another owner",
                          self.options.lock_file)
                return False
            self._current = renewed
            return True
