"""Preparing a failed compaction or clustering attempt to run again: its partial files are deleted through a
rollback plan, and the instant goes back to requested with its plan, as Hudi rolls back an inflight
compaction (a rollback left pending by an earlier retry is finished rather than planned again). The attempt's
files are found by attempt_files."""
from __future__ import annotations

from tms.hudi.errors import HudiError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import InstantInfo, RollbackPlan, parse_rollback_plan, serialize_rollback_plan

from .action import ExecutionResult
from .attempt_files import attempt_rollback_requests
from .dispatch import execute_instant
from .fencing import Fence, no_fence
from .rollback import keeps_plan
from .runner import LocalRunner, Runner


def prepare_retry(table: HudiTable, timestamp: str, runner: Runner | None = None,
                  fence: Fence = no_fence, transactions: TransactionManager | None = None) -> ExecutionResult | None:
    """Roll back the inflight attempt of compaction or clustering `timestamp`; None if it is not inflight
    (nothing to roll back). The caller must know the attempt is dead (its lease expired). `transactions`:
    the table's lock, under which the rollback is planned and completed."""
    transactions = transactions or TransactionManager.single_writer(table)
    tl = table.timeline
    tl.reload()
    states = tl.states_of(timestamp)
    if not states:
        raise HudiError(f"no instant {timestamp} on the timeline of table {table.name}")
    requested = states.get(State.REQUESTED)
    if requested is None or State.COMPLETED in states or not keeps_plan(table, timestamp, requested.action):
        raise HudiError(f"instant {timestamp} is not a pending compaction or clustering plan")
    if State.INFLIGHT not in states:
        return None
    rollback = _pending_rollback_of(table, timestamp)  # a retry that died while rolling back: finish that
    if rollback is None:
        plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=timestamp, action=requested.action),
                            rollback_requests=attempt_rollback_requests(table, timestamp))
        with transactions.transaction():
            fence()
            rollback = tl.create_requested(Action.ROLLBACK, serialize_rollback_plan(plan)).timestamp
    return execute_instant(table, rollback, runner or LocalRunner(), fence, transactions=transactions)


def _pending_rollback_of(table: HudiTable, timestamp: str) -> str | None:
    for inst in table.timeline.pending([Action.ROLLBACK]):
        target = parse_rollback_plan(table.timeline.read_plan(inst.timestamp)).instant_to_rollback
        if target is not None and target.commit_time == timestamp:
            return inst.timestamp
    return None
