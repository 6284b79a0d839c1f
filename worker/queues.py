"""Which resource queue a job goes to. A queue admits a task when its restrictions (databases, tables,
services) allow it and, if it is reserved, the table's priority reaches the reservation. Among the queues
with a free slot (running jobs < capacity) the table's preferred queue comes first, then the reserved queues
its priority earns, then the shared ones; within each tier the least loaded relative to its capacity."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from tms.db import QueueRecord, TableRecord


def admits(queue: QueueRecord, table: TableRecord, service: str) -> bool:
    """Whether `queue` may run `service` for `table` (a restriction left null restricts nothing)."""
    if queue.allowed_databases is not None and table.database not in queue.allowed_databases:
        return False
    if queue.allowed_tables is not None and f"{table.database}.{table.name}" not in queue.allowed_tables:
        return False
    if queue.allowed_services is not None and service not in queue.allowed_services:
        return False
    return queue.reserved_for_priority is None or table.priority >= queue.reserved_for_priority


def _tier(queue: QueueRecord, table: TableRecord) -> int:
    if queue.name == table.queue:
        return 0
    return 1 if queue.reserved_for_priority is not None else 2


def choose_queue(queues: Iterable[QueueRecord], running: Mapping[str | None, int], table: TableRecord,
                 service: str) -> QueueRecord | None:
    """The queue to run `service` of `table` on now, or None when every queue it may use is full."""
    free = [q for q in queues if q.enabled and admits(q, table, service) and running.get(q.name, 0) < q.capacity]
    if not free:
        return None
    return min(free, key=lambda q: (_tier(q, table), running.get(q.name, 0) / q.capacity, q.name))
