"""Hudi's compaction strategies (org.apache.hudi.table.action.compact.strategy): the metrics every
operation carries, and how each strategy orders and filters the operations of a plan."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar

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
    strategy = policy.compaction_strategy
    if strategy is CompactionStrategy.UNBOUNDED:
        return list(ops)
    if strategy is CompactionStrategy.BOUNDED_IO:
        return _bounded_io(ops, policy.compaction_target_io_mb)
    if strategy is CompactionStrategy.LOG_FILE_SIZE:
        big = [op for op in ops if op.metrics[TOTAL_LOG_FILES_SIZE] >= policy.compaction_log_file_size_threshold]
        big.sort(key=lambda op: -op.metrics[TOTAL_LOG_FILES_SIZE])  # largest log bytes first
        return _bounded_io(big, policy.compaction_target_io_mb)
    if strategy is CompactionStrategy.LOG_FILE_NUM:
        many = [op for op in ops if len(op.delta_file_paths) >= policy.compaction_log_file_num_threshold]
        many.sort(key=lambda op: -len(op.delta_file_paths))
        return _bounded_io(many, policy.compaction_target_io_mb)
    if strategy is CompactionStrategy.DAY_BASED:
        return _newest_partitions(ops, policy.compaction_day_based_partitions)
    raise ValueError(f"unknown compaction strategy {strategy}")
