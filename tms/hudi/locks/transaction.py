"""Hudi's TransactionManager for one table: a transaction holds the table's lock (the provider and key the
writers use), starts from a freshly reloaded timeline, and generates every instant and completion time it
writes with the table's skew-waiting time generator, so that times are unique and increase in lock order
across TMS and the writers. Transactions nest (the lock is taken once per thread, as Curator's mutex is
reentrant). A table without a lock provider (a single writer) gets transactions that take no lock."""
from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from ..table.hudi_table import HudiTable
from ..timeline.instant_time import TimeGenerator
from ..timeline.timeline import Timeline
from .config import ConcurrencyConfig, parse_concurrency_options
from .lock_manager import LockManager


class TransactionManager:
    def __init__(self, table: HudiTable, config: ConcurrencyConfig | None = None,
                 lock_manager: LockManager | None = None):
        self.table = table
        self.config = config or ConcurrencyConfig()
        self._lock = lock_manager if lock_manager is not None else (
            LockManager(self.config, context=table.context) if self.config.has_lock else None)
        self.time_generator = TimeGenerator(self.config.max_clock_skew_ms if self.config.has_lock else 0)
        self._threads = threading.RLock()  # threads of this process take turns; the provider excludes processes
        self._depth = 0
        self._saved_generator: TimeGenerator | None = None

    @classmethod
    def single_writer(cls, table: HudiTable) -> TransactionManager:
        return cls(table)

    @classmethod
    def from_options(cls, table: HudiTable, options: Mapping[str, str]) -> TransactionManager:
        """The transaction manager of `table` under its concurrency options (Hudi names: a table registered
        with TMS, or `--option`s); LockConfigError for options TMS cannot honour."""
        return cls(table, parse_concurrency_options(options, base_path=table.base_path, table_name=table.name))

    @property
    def takes_lock(self) -> bool:
        return self._lock is not None

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextmanager
    def transaction(self, *, exact_view: bool = False) -> Iterator[Timeline]:
        """Hold the table's lock; yields the table's timeline, reloaded under it (`exact_view`: never from a
        listing of the folder's tail, for a caller that decides on savepoints or older instants; see
        tail_listing)."""
        with self._threads:
            outermost = self._depth == 0
            if outermost:
                if self._lock is not None:
                    self._lock.lock()
                timeline = self.table.timeline
                self._saved_generator = timeline.time_generator
                timeline.time_generator = self.time_generator
            self._depth += 1
            try:
                if outermost:
                    self.table.timeline.reload(force=True, exact=exact_view)
                yield self.table.timeline
            finally:
                self._depth -= 1
                if outermost:
                    self.table.timeline.time_generator = self._saved_generator or TimeGenerator()
                    self._saved_generator = None
                    if self._lock is not None:
                        self._lock.unlock()

    def new_instant_time(self) -> str:
        """A new instant time, generated under the lock."""
        with self.transaction() as timeline:
            return timeline.new_instant_time()

    def close(self) -> None:
        """Close the lock provider; a transaction in progress (another thread's) ends first."""
        with self._threads:
            if self._lock is not None:
                self._lock.close()

    def __enter__(self) -> TransactionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
