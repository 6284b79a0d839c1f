"""One TTL task's work, as its job runs it (jobs.ttl_job): partition TTL deletes the expired partitions in one
`delete_partition` replacecommit, record TTL deletes the expired records in one delete commit, each under the
table's lock with the task's fence checked whenever the lock is taken (so an attempt that lost its lease never
completes its instant).

The task's plan holds the TTL options and the moment the TTL counts from, as the schedule requested it: every
attempt deletes by the same clock. The instant an attempt writes carries the task's request instant in its extra
metadata (`tms.ttl.task`, in its inflight or requested file too), so that a retry knows what an earlier attempt
of the same task left: a completed instant is the task's result (nothing is written again); a pending one is
rolled back first (TMS's rollback, as a failed write's), then the work runs again. What an attempt deletes is
read from the table as it is then, so a retry never deletes anything twice."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.errors import HudiError
from tms.hudi.locks import parse_concurrency_options
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State
from tms.hudi.timeline.serde import parse_commit_metadata, parse_requested_replace_metadata
from tms.hudi.timeline.timeline import Timeline
from tms.planning.errors import PlanningError
from tms.planning.policy import TablePolicy
from tms.planning.rollback import plan_rollback
from tms.planning.ttl import expired_partitions, record_ttl_cutoff, ttl_policy_refusal
from tms.table_service import TableService
from tms.task_payload import TtlRequest

from .dispatch import execute_instant
from .errors import ExecutionError
from .fencing import Fence, no_fence
from .partition_delete import delete_partitions
from .record_ttl_delete import DEFAULT_MAX_FILE_GROUPS, delete_expired_records
from .runner import LocalRunner

TASK_KEY = "tms.ttl.task"  # extra metadata of the instant a TTL task writes: the task's request instant
_WRITES = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


class FencedTransactions(TransactionManager):
    """The table's transactions, the task's fence checked each time one is entered (under the lock)."""

    fence: Fence = staticmethod(no_fence)

    @contextmanager
    def transaction(self, *, exact_view: bool = False) -> Iterator[Timeline]:
        with super().transaction(exact_view=exact_view) as timeline:
            self.fence()
            yield timeline


@dataclass(frozen=True)
class TtlRun:
    service: str
    instant: str | None            # the instant written (None: nothing had expired)
    partitions: tuple[str, ...]    # partition TTL: the partitions deleted
    records: int                   # record TTL: the records deleted
    file_groups: int
    resumed: bool                  # the instant is an earlier attempt's (completed before its result was recorded)
    rolled_back: tuple[str, ...]   # earlier attempts' pending instants rolled back first

    def record(self) -> dict[str, Any]:
        return {"action": self.service, "instant": self.instant, "partitions": list(self.partitions),
                "records": self.records, "file_groups": self.file_groups, "resumed": self.resumed,
                "rolled_back": list(self.rolled_back)}

    def summary(self) -> str:
        done = "found completed by an earlier attempt" if self.resumed else "written"
        if self.instant is None:
            what = "nothing had expired"
        elif self.service == TableService.PARTITION_TTL:
            what = f"{len(self.partitions)} partition(s) deleted in replacecommit {self.instant} ({done})"
        else:
            what = f"{self.records} record(s) of {self.file_groups} file group(s) deleted in {self.instant} ({done})"
        return f"{self.service}: {what}"


def _marker_of(timeline: Timeline, instant: Instant) -> str | None:
    """The TTL task an instant file names (TASK_KEY), if any."""
    data = timeline.read(instant)
    if not data:
        return None
    try:
        if instant.state is State.REQUESTED:
            if instant.action != Action.REPLACE_COMMIT:
                return None
            extra = parse_requested_replace_metadata(data).extra_metadata
        else:
            extra = parse_commit_metadata(data).extra_metadata
    except (HudiError, ValueError):  # not ours: another writer's content TMS need not read
        return None
    return (extra or {}).get(TASK_KEY)


def earlier_attempts(table: HudiTable, task: str) -> tuple[Instant | None, list[Instant]]:
    """The instant an earlier attempt of `task` completed (if any), and the ones it left pending."""
    tl = table.timeline
    tl.reload(force=True)
    completed = next((i for i in reversed(tl.completed(_WRITES)) if _marker_of(tl, i) == task), None)
    pending = [tl.states_of(i.timestamp).get(State.INFLIGHT, i) for i in tl.pending(_WRITES)]
    return completed, [i for i in pending if _marker_of(tl, i) == task]


def _roll_back(table: HudiTable, instant: Instant, transactions: TransactionManager, fence: Fence) -> None:
    """Undo a dead attempt's pending instant (the task was claimed again: its lease is gone)."""
    if instant.state is State.REQUESTED:  # nothing written yet but the plan
        with transactions.transaction() as tl:
            tl.delete_pending(instant.timestamp)
        return
    with transactions.transaction():
        try:
            planned = plan_rollback(table, instant.timestamp)
        except PlanningError as exc:
            raise ExecutionError(f"cannot roll back the earlier attempt's {instant.action} {instant.timestamp}: "
                                 f"{exc}") from None
    if planned is not None:  # else a rollback of it is planned already: it never completes
        execute_instant(table, planned.instant, LocalRunner(1), fence, transactions=transactions)


def run_ttl_task(service: str, base_path: str, task: str, plan: TtlRequest, fence: Fence = no_fence,
                 options: Mapping[str, str] | None = None, max_file_groups: int = DEFAULT_MAX_FILE_GROUPS,
                 context: HudiContext = DEFAULT_CONTEXT) -> TtlRun:
    """Run the TTL task requested at `task` (its instant) on the table at `base_path`, read with `context`;
    `options`: the table's lock options. ExecutionError (one line) when it cannot be done exactly."""
    if service not in (TableService.TTL, TableService.PARTITION_TTL):
        raise ExecutionError(f"{service} is not a TTL task")
    if plan.now is None:
        raise ExecutionError(f"the {service} task's plan names no moment the TTL counts from")
    policy = TablePolicy.from_stored(dict(plan.policy))
    now = datetime.fromisoformat(plan.now)
    table = HudiTable.load(base_path, context=context)
    refusal = ttl_policy_refusal(table, policy)
    if refusal:
        raise ExecutionError(f"{refusal[0]}: {refusal[1]}")
    transactions = FencedTransactions(table, parse_concurrency_options(options or {}, base_path=table.base_path,
                                                                       table_name=table.name))
    transactions.fence = fence
    with transactions:
        completed, pending = earlier_attempts(table, task)
        if completed is not None:
            meta = table.timeline.commit_metadata(completed)
            return TtlRun(service, completed.timestamp, tuple(sorted(meta.partition_to_replace_file_ids or {})),
                          sum(s.num_deletes or 0 for s in meta.write_stats()), len(meta.write_stats()), True, ())
        for instant in pending:
            _roll_back(table, instant, transactions, fence)
        rolled_back = tuple(i.timestamp for i in pending)
        marker = {TASK_KEY: task}
        if service == TableService.PARTITION_TTL:
            partitions = expired_partitions(table, policy, now)
            if not partitions:
                return TtlRun(service, None, (), 0, 0, False, rolled_back)
            deleted = delete_partitions(table, partitions, transactions, extra_metadata=marker)
            return TtlRun(service, deleted, tuple(partitions), 0, 0, False, rolled_back)
        if not policy.record_ttl:
            raise ExecutionError("the record TTL task's plan sets no tms.ttl.field and tms.ttl.days")
        done = delete_expired_records(table, policy.ttl_field, record_ttl_cutoff(policy, now),
                                      transactions=transactions, max_file_groups=max_file_groups,
                                      extra_metadata=marker)
        return TtlRun(service, done.instant, (), done.deleted, done.file_groups, False, rolled_back)
