"""Preparing a failed compaction or clustering attempt to run again: its partial files are deleted through a
rollback plan, and the instant goes back to requested with its plan, as Hudi rolls back an inflight
compaction (a rollback left pending by an earlier retry is finished rather than planned again). The attempt's
files are those its markers name, plus any base file of the instant found in the plan's partitions (a marker
is written before its file, so the listing is only a safety net)."""
from __future__ import annotations

from tms.hudi.errors import HudiError
from tms.hudi.file_names import BaseFileName
from tms.hudi.instant import COMPACTION, ROLLBACK, State
from tms.hudi.serde import (
    InstantInfo,
    RollbackPlan,
    RollbackRequest,
    parse_compaction_plan,
    parse_requested_replace_metadata,
    parse_rollback_plan,
    serialize_rollback_plan,
)
from tms.hudi.table import HudiTable

from .action import ExecutionResult
from .dispatch import execute_instant
from .fencing import Fence, no_fence
from .markers import marked_files
from .rollback import keeps_plan
from .runner import LocalRunner, Runner


def prepare_retry(table: HudiTable, timestamp: str, runner: Runner | None = None,
                  fence: Fence = no_fence) -> ExecutionResult | None:
    """Roll back the inflight attempt of compaction or clustering `timestamp`; None if it is not inflight
    (nothing to roll back). The caller must know the attempt is dead (its lease expired)."""
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
                            rollback_requests=_requests(table, timestamp))
        fence()
        rollback = tl.create_requested(ROLLBACK, serialize_rollback_plan(plan)).timestamp
    return execute_instant(table, rollback, runner or LocalRunner(), fence)


def _pending_rollback_of(table: HudiTable, timestamp: str) -> str | None:
    for inst in table.timeline.pending([ROLLBACK]):
        target = parse_rollback_plan(table.timeline.read_plan(inst.timestamp)).instant_to_rollback
        if target is not None and target.commit_time == timestamp:
            return inst.timestamp
    return None


def _requests(table: HudiTable, timestamp: str) -> list[RollbackRequest]:
    storage = table.storage
    files = set(marked_files(storage, timestamp))
    for partition in _plan_partitions(table, timestamp):
        for info in storage.listdir(partition):
            name = BaseFileName.parse(info.name)
            if name is not None and name.instant == timestamp:
                files.add(info.path)
    requests = []
    for rel in sorted(files):
        partition, _, file_name = rel.rpartition("/")
        name = BaseFileName.parse(file_name)
        requests.append(RollbackRequest(partition_path=partition, file_id=name.file_id if name else "",
                                        latest_base_instant="", files_to_be_deleted=[storage.uri(rel)]))
    return requests


def _plan_partitions(table: HudiTable, timestamp: str) -> set[str]:
    data = table.timeline.read_plan(timestamp)
    instant = table.timeline.get(timestamp)
    if instant is not None and instant.action == COMPACTION:
        return {op.partition_path or "" for op in parse_compaction_plan(data).operations}
    plan = parse_requested_replace_metadata(data).clustering_plan
    if plan is None:
        raise HudiError(f"replacecommit {timestamp} holds no clustering plan")
    return {s.partition_path or "" for g in plan.input_groups for s in g.slices}
