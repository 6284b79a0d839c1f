"""Hudi's ZookeeperBasedLockProvider, through kazoo: the Curator InterProcessMutex that Java writers take on
`base_path/lock_key`, with the same znodes, so a Java writer and TMS exclude each other.

Curator's mutex protocol: each contender creates an ephemeral sequential child `_c_<uuid>-lock-<seq>` (the
`_c_<uuid>-` prefix is Curator's "protection" that lets a client find its node after a lost reply); the lowest
sequence holds the lock; the others watch their predecessor and wait. kazoo's `Lock` recipe implements the
same algorithm; only the node name differs, so this subclass names its node as Curator does (and, like
Curator, counts kazoo's own `__lock__` nodes as contenders too, so kazoo clients of the same path exclude it)."""
from __future__ import annotations

import os
import socket
import threading
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.lock import Lock
from kazoo.retry import KazooRetry

from .config import LockRetries, ZookeeperLockOptions
from .provider import LockError

CURATOR_LOCK_NAME = "-lock-"


class CuratorMutex(Lock):  # type: ignore[misc]  # kazoo is untyped
    """kazoo's lock recipe with Curator InterProcessMutex node names: `_c_<uuid>-lock-<seq>`."""

    _NODE_NAME = CURATOR_LOCK_NAME
    _EXCLUDE_NAMES = [CURATOR_LOCK_NAME]

    def __init__(self, client: KazooClient, path: str, identifier: str | None = None):
        super().__init__(client, path, identifier, extra_lock_patterns=("__lock__",))
        self.prefix = f"_c_{uuid.uuid4()}{CURATOR_LOCK_NAME}"
        self.create_path = f"{self.path}/{self.prefix}"


class _SharedClients:
    """One started KazooClient per ZooKeeper ensemble and session settings, shared by every table's provider in
    the process and closed with its last user: a planner caching thousands of tables keeps one session (and
    kazoo's two threads) per ensemble, not one per table. Each provider still holds its own mutex node."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._clients: dict[tuple[object, ...], tuple[KazooClient, int]] = {}

    @staticmethod
    def key(options: ZookeeperLockOptions, retries: LockRetries) -> tuple[object, ...]:
        return (options.connect_string, options.session_timeout_ms, options.connection_timeout_ms,
                retries.num_retries, retries.wait_time_ms_between_retry, retries.max_wait_time_ms_between_retry)

    def acquire(self, options: ZookeeperLockOptions, retries: LockRetries) -> KazooClient:
        key = self.key(options, retries)
        with self._guard:  # held while connecting, so that one ensemble never gets two sessions
            if key in self._clients:
                client, users = self._clients[key]
                self._clients[key] = (client, users + 1)
                return client
            retry = KazooRetry(max_tries=retries.num_retries, delay=retries.wait_time_ms_between_retry / 1000,
                               max_delay=retries.max_wait_time_ms_between_retry / 1000, ignore_expire=False)
            client = KazooClient(hosts=options.connect_string, timeout=options.session_timeout_ms / 1000,
                                 connection_retry=retry.copy(), command_retry=retry.copy())
            try:
                client.start(timeout=options.connection_timeout_ms / 1000)
            except (KazooTimeoutError, KazooException) as e:
                client.close()
                raise LockError(f"cannot connect to ZooKeeper at {options.connect_string} for the table lock "
                                f"{options.lock_path}: {e or type(e).__name__}") from None
            self._clients[key] = (client, 1)
            return client

    def release(self, options: ZookeeperLockOptions, retries: LockRetries) -> None:
        key = self.key(options, retries)
        with self._guard:
            client, users = self._clients[key]
            if users > 1:
                self._clients[key] = (client, users - 1)
                return
            del self._clients[key]
        client.stop()
        client.close()

    def open_sessions(self) -> int:
        with self._guard:
            return len(self._clients)


SHARED_CLIENTS = _SharedClients()


class ZookeeperLockProvider:
    def __init__(self, options: ZookeeperLockOptions, retries: LockRetries):
        self.options = options
        self._retries = retries
        self.client = SHARED_CLIENTS.acquire(options, retries)
        self._identifier = f"{socket.gethostname()} pid {os.getpid()} (TMS)"
        self._mutex: CuratorMutex | None = None
        self._guard = threading.Lock()
        self._closed = False

    @property
    def node(self) -> str | None:
        """The znode this provider holds (`_c_<uuid>-lock-<seq>`), if it holds the lock."""
        return self._mutex.node if self._mutex is not None and self._mutex.is_acquired else None

    def try_lock(self, timeout_s: float) -> bool:
        with self._guard:
            if self._mutex is not None and self._mutex.is_acquired:
                raise LockError(f"the ZooKeeper lock {self.options.lock_path} is already held by this provider")
            mutex = CuratorMutex(self.client, self.options.lock_path, self._identifier)
            try:
                acquired = mutex.acquire(blocking=True, timeout=timeout_s)
            except LockTimeout:
                acquired = False
            except KazooException as e:
                raise LockError(f"ZooKeeper lock {self.options.lock_path}: {e or type(e).__name__}") from None
            if acquired:
                self._mutex = mutex
            return bool(acquired)

    def unlock(self) -> None:
        with self._guard:
            mutex, self._mutex = self._mutex, None
            if mutex is None:
                return
            try:
                mutex.release()
            except KazooException as e:
                raise LockError(f"cannot release the ZooKeeper lock {self.options.lock_path}: "
                                f"{e or type(e).__name__}") from None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.unlock()
        finally:
            SHARED_CLIENTS.release(self.options, self._retries)

    def describe(self) -> str:
        holder = ""
        try:
            contenders = CuratorMutex(self.client, self.options.lock_path).contenders()
            if contenders:
                holder = f", held by {contenders[0] or 'an unnamed client'}"
        except KazooException:
            pass
        return f"ZooKeeper lock {self.options.connect_string}{self.options.lock_path}{holder}"
