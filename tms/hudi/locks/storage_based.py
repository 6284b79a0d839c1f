"""Hudi 1.1's StorageBasedLockProvider: the lock is the JSON file `<base>/.hoodie/.locks/table_lock.json`
({"expired": bool, "validUntil": epoch ms, "owner": uuid}), changed only by conditional writes (the write
succeeds only if the file is still the version the writer read, or still absent). The holder renews
`validUntil` from a heartbeat thread every `heartbeat.poll.secs`; release writes `"expired": true`. A lock
whose `validUntil` passed (plus Hudi's 500 ms drift buffer) belongs to a dead holder and is taken over.

Conditional writes here are those of a local filesystem (LocalLockFileStore); object stores would plug in
a store with the same two calls (S3 If-Match / If-None-Match, GCS generation preconditions)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from .config import StorageLockOptions
from .filesystem import is_local_uri
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


class LocalLockFileStore:
    """Conditional writes on a local filesystem. A version is the file's inode and content digest; a write
    replaces the file (new inode) while holding an exclusive flock on the version it read, so two writers
    from the same version cannot both succeed; a create is a hard link, which fails if the file exists."""

    def __init__(self, path: str):
        self.path = path[len("file://"):] if path.startswith("file://") else path

    def read(self) -> LockFileVersion | None:
        try:
            with open(self.path, "rb") as fh:
                return self._version(fh)
        except FileNotFoundError:
            return None

    @staticmethod
    def _version(fh: BinaryIO) -> LockFileVersion | None:
        raw = fh.read()
        try:
            data = StorageLockData.from_json(raw)
        except (ValueError, KeyError, TypeError):
            return None
        return LockFileVersion(data, f"{os.fstat(fh.fileno()).st_ino}-{hashlib.sha256(raw).hexdigest()}")

    def write_if(self, data: StorageLockData, expected: LockFileVersion | None) -> LockFileVersion | None:
        folder = os.path.dirname(self.path)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{os.path.basename(self.path)}.{uuid.uuid4().hex}.tmp")
        raw = data.to_json()
        with open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            if expected is None:
                try:
                    os.link(tmp, self.path)
                except FileExistsError:
                    return None
            else:
                try:
                    current = open(self.path, "rb")
                except FileNotFoundError:
                    return None
                with current:
                    fcntl.flock(current.fileno(), fcntl.LOCK_EX)
                    try:
                        if os.stat(self.path).st_ino != os.fstat(current.fileno()).st_ino:
                            return None  # replaced while we waited
                        version = self._version(current)
                        if version is None or version.etag != expected.etag:
                            return None
                        os.replace(tmp, self.path)
                    except FileNotFoundError:
                        return None
                    finally:
                        fcntl.flock(current.fileno(), fcntl.LOCK_UN)
            return self.read()
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


class StorageLockProvider:
    def __init__(self, options: StorageLockOptions, store: LockFileStore | None = None,
                 poll_seconds: float = ACQUIRE_POLL_SECONDS):
        """`poll_seconds`: between attempts while the lock is held by another owner (Hudi waits 1 s)."""
        if store is None:
            if not is_local_uri(options.lock_file):
                raise LockError(f"StorageBasedLockProvider on {options.lock_file}: TMS has conditional writes for "
                                "local filesystems only so far; use the ZooKeeper lock on this table")
            store = LocalLockFileStore(options.lock_file)
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

    def holds_lock(self) -> bool:
        with self._guard:
            return self._current is not None and self._still_valid(self._current.data)

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
