"""What every lock provider offers, as Hudi's `LockProvider`: one attempt to take the lock (waiting up to a
time), release, close, and a line naming the lock and its current owner for errors."""
from __future__ import annotations

from typing import Protocol

from ..errors import HudiError


class LockError(HudiError):
    """The table's lock could not be taken or released."""


class LockProvider(Protocol):
    def try_lock(self, timeout_s: float) -> bool:
        """Take the lock, waiting up to `timeout_s`; False if another holder kept it."""

    def unlock(self) -> None:
        """Release the lock if this provider holds it."""

    def close(self) -> None:
        """Release everything (the lock, connections, threads)."""

    def describe(self) -> str:
        """The lock's name and, if known, who holds it."""
