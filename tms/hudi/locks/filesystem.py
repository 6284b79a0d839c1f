"""Hudi's FileSystemBasedLockProvider: the lock is the file `<hoodie.write.lock.filesystem.path>/lock` (default
`<base>/.hoodie/lock`), created exclusively by its holder and deleted to release it. A lock file older than
`hoodie.write.lock.filesystem.expire` minutes (0: never) is deleted by the next contender and taken over, as
Hudi's provider does with the lock of a dead writer. The file holds Hudi's LockInfo JSON.

Like Hudi, this needs storage with an atomic create-if-absent: local filesystems (Hudi also allows HDFS).
Unlike Hudi, release deletes the lock file only if it is still this provider's (a holder whose lock expired
and was taken over never deletes its successor's lock)."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from datetime import datetime

from ..context import DEFAULT_CONTEXT, HudiContext
from ..errors import InstantConflictError
from .config import FileSystemLockOptions
from .provider import LockError

LOCK_FILE_NAME = "lock"
POLL_SECONDS = 0.05


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


class FileSystemLockProvider:
    def __init__(self, options: FileSystemLockOptions, context: HudiContext = DEFAULT_CONTEXT):
        if not is_local_uri(options.lock_dir):
            raise LockError(f"hoodie.write.lock.filesystem.path={options.lock_dir}: TMS takes the file-system lock "
                            "only on local filesystems (atomic create); use the ZooKeeper lock on object stores")
        self.options = options
        self.storage = context.open_storage(options.lock_dir)
        self.owner = f"tms-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._held = False
        self._guard = threading.Lock()

    def try_lock(self, timeout_s: float) -> bool:
        """One attempt, as Hudi's (which ignores the wait time), repeated here until `timeout_s` passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self._try_once():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    def _try_once(self) -> bool:
        with self._guard:
            if self._held:
                raise LockError(f"the file-system lock {self.describe()} is already held by this provider")
            if self.storage.exists(LOCK_FILE_NAME):
                if not self._expired():
                    return False
                self.storage.delete(LOCK_FILE_NAME)  # a dead holder's lock: taken over, as Hudi does
            try:
                self.storage.write_atomic(LOCK_FILE_NAME, self._lock_info())
            except (InstantConflictError, FileExistsError):
                return False  # another contender created it first
            self._held = True
            return True

    def _expired(self) -> bool:
        if self.options.expire_minutes == 0:
            return False
        try:
            mtime = self.storage.info(LOCK_FILE_NAME).mtime
        except FileNotFoundError:
            return True  # released meanwhile
        return mtime is not None and time.time() - mtime > self.options.expire_minutes * 60

    def _lock_info(self) -> bytes:
        """Hudi's LockInfo (what Java writers print as the current owner)."""
        return json.dumps({
            "lockCreateTime": datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
            "lockThreadName": f"{self.owner} {threading.current_thread().name}",
            "lockStacksInfo": [],
        }).encode()

    def _current_owner(self) -> str | None:
        try:
            info = json.loads(self.storage.read_bytes(LOCK_FILE_NAME))
        except (FileNotFoundError, ValueError):
            return None
        return str(info.get("lockThreadName", "")) if isinstance(info, dict) else None

    def unlock(self) -> None:
        with self._guard:
            if not self._held:
                return
            self._held = False
            owner = self._current_owner()
            if owner is not None and owner.split(" ", 1)[0] == self.owner:
                self.storage.delete(LOCK_FILE_NAME)

    def close(self) -> None:
        self.unlock()

    def describe(self) -> str:
        owner = self._current_owner()
        return f"file-system lock {self.options.lock_dir}/{LOCK_FILE_NAME}" + (f", held by {owner}" if owner else "")
