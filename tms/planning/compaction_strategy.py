"""Hudi's compaction strategies (org.apache.hudi.table.action.compact.strategy): the metrics every
operation carries, and how each strategy orders and filters the operations of a plan."""
from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

from .policy import CompactionStrategy, TablePolicy

TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"

_MB = 1024 * 1024


def capture_metrics(base_size: int | None, log_sizes: list[int], parquet_max_file_size: int,
                    log_files: int | None = None) -> dict[str, float]:
    """CompactionStrategy.captureMetrics: MB are whole (FSUtils.getSizeInMB), a slice without a base
    file is expected to write a full parquet file. `log_files`: their number, when `log_sizes` is their total."""
    log_bytes = sum(s for s in log_sizes if s >= 0)
    read_mb = ((base_size or 0) + log_bytes) // _MB
    write_mb = (base_size if base_size is not None else parquet_max_file_size) // _MB
    return {TOTAL_IO_READ_MB: float(read_mb), TOTAL_IO_WRITE_MB: float(write_mb),
            TOTAL_IO_MB: float(read_mb + write_mb), TOTAL_LOG_FILES_SIZE: float(log_bytes),
            TOTAL_LOG_FILES: float(len(log_sizes) if log_files is None else log_files)}


class Operation(Protocol):
    """What a strategy reads of an operation: a plan's (CompactionOperation) or a candidate's."""

    @property
    def partition_path(self) -> str | None: ...
    @property
    def delta_file_paths(self) -> Sequence[str]: ...
    @property
    def metrics(self) -> dict[str, float]: ...


Op = TypeVar("Op", bound=Operation)


def _bounded_io(ops: list[Op], target_io_mb: int) -> list[Op]:
    """BoundedIOCompactionStrategy: operations in order while the IO budget lasts; the one that
    exhausts it is still taken."""
    taken: list[Op] = []
    remaining = target_io_mb
    for op in ops:
        taken.append(op)
        remaining -= int(op.metrics[TOTAL_IO_MB])
        if remaining <= 0:
            break
    return taken


def _newest_partitions(ops: list[Op], count: int) -> list[Op]:
    """DayBasedCompactionStrategy: the operations of the newest `count` partitions. Hudi parses
    `yyyy/MM/dd` paths; date-named partitions sort the same way as strings, so any layout works."""
    by_partition: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        by_partition[op.partition_path or ""].append(op)
    newest = sorted(by_partition, reverse=True)[:count]
    return [op for partition in newest for op in by_partition[partition]]


def order_and_filter(ops: list[Op], policy: TablePolicy) -> list[Op]:
    selection: Selection[Op] = Selection(policy)
    for op in ops:
        selection.offer(op)
    return selection.chosen()


class Selection(Generic[Op]):
    """The strategy's choice made as the operations come, in plan order. The strategies that order the operations
    and take them while the target IO lasts (BOUNDED_IO, LOG_FILE_SIZE, LOG_FILE_NUM) keep only those that may still
    be chosen: an operation that the target IO is spent before, however the ones still to come rank, is let go. A
    full pass over a giant table then holds about what its plan will (Hudi's 500 GB default), not an operation per
    file group."""

    def __init__(self, policy: TablePolicy):
        self.policy = policy
        self.strategy = policy.compaction_strategy
        if self.strategy not in CompactionStrategy:
            raise ValueError(f"unknown compaction strategy {self.strategy}")
        self._kept: list[Op] = []  # UNBOUNDED and DAY_BASED: every operation
        # The others: a heap whose top is the operation that ranks last: (rank, -arrival, its IO in MB, it)
        self._ranked: list[tuple[float, int, int, Op]] = []
        self._ranked_io = 0
        self._arrivals = 0
        self._let_go: set[str] = set()  # partitions of operations not chosen (filtered out, or ranked out)

    def offer(self, op: Op) -> None:
        strategy, policy = self.strategy, self.policy
        if strategy in (CompactionStrategy.UNBOUNDED, CompactionStrategy.DAY_BASED):
            self._kept.append(op)
            return
        if strategy is CompactionStrategy.BOUNDED_IO:
            rank = 0.0  # plan order
        elif strategy is CompactionStrategy.LOG_FILE_SIZE:
            rank = op.metrics[TOTAL_LOG_FILES_SIZE]  # largest log bytes first
            if rank < policy.compaction_log_file_size_threshold:
                self._let_go.add(op.partition_path or "")
                return
        else:  # LOG_FILE_NUM: most log files first
            rank = float(len(op.delta_file_paths))
            if rank < policy.compaction_log_file_num_threshold:
                self._let_go.add(op.partition_path or "")
                return
        self._arrivals += 1
        io = int(op.metrics[TOTAL_IO_MB])
        heapq.heappush(self._ranked, (rank, -self._arrivals, io, op))
        self._ranked_io += io
        # The last-ranked operation is chosen only if the others cannot spend the target IO without it.
        while self._ranked and self._ranked_io - self._ranked[0][2] >= policy.compaction_target_io_mb:
            _, _, dropped_io, dropped = heapq.heappop(self._ranked)
            self._ranked_io -= dropped_io
            self._let_go.add(dropped.partition_path or "")

    def chosen(self) -> list[Op]:
        """The operations of the plan, in the plan's order."""
        if self.strategy is CompactionStrategy.UNBOUNDED:
            return list(self._kept)
        if self.strategy is CompactionStrategy.DAY_BASED:
            out = _newest_partitions(self._kept, self.policy.compaction_day_based_partitions)
            considered = self._kept
        else:
            considered = [op for *_, op in sorted(self._ranked, key=lambda item: (-item[0], -item[1]))]
            out = _bounded_io(considered, self.policy.compaction_target_io_mb)
        taken = {id(op) for op in out}
        self._let_go.update(op.partition_path or "" for op in considered if id(op) not in taken)
        return out

    def let_go(self) -> set[str]:
        """The partitions of the operations offered and not chosen (once `chosen` was called)."""
        return set(self._let_go)
