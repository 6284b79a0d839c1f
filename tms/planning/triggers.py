"""When compaction and clustering are due, by Hudi's rules.

Compaction (ScheduleCompactionActionExecutor.needCompact): the delta commits since the last completed
`commit` or `replacecommit` (in any state, as CompactionUtils.getDeltaCommitsSinceLatestCompaction counts
them), and the seconds since that instant (or since the first delta commit when none completed), against
`hoodie.compact.inline.max.delta.commits` / `...max.delta.seconds` under the trigger strategy;
NUM_COMMITS_AFTER_LAST_REQUEST counts the delta commits since the last compaction in any state, requested
included (getDeltaCommitsSinceLatestCompactionRequest), so a plan still pending is not planned again from
the same commits. Unless `tms.compaction.plan.while.pending` is set, no compaction is due while a plan of
the table still waits for a worker (requested, not started).

Clustering (ClusteringPlanActionExecutor): the completed commits since the last clustering instant,
pending or completed, against `hoodie.clustering.async.max.commits`."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State, instant_to_datetime
from tms.hudi.timeline.serde import MetadataFormatError, parse_requested_replace_metadata
from tms.hudi.timeline.timeline import WRITE_ACTIONS

from .policy import TablePolicy, TriggerStrategy

CLUSTER_OPERATION = "CLUSTER"


@dataclass(frozen=True)
class TriggerDecision:
    due: bool
    commits: int                  # delta commits (compaction) or commits (clustering) counted
    since: str | None             # the instant counted from
    elapsed_seconds: float | None = None
    waiting_for: tuple[str, ...] = ()  # compaction plans not started yet, which hold back the next one


def compaction_trigger(table: HudiTable, policy: TablePolicy, now: datetime) -> TriggerDecision:
    tl = table.timeline
    done = tl.last_of((Action.COMMIT, Action.REPLACE_COMMIT), completed=True)
    if policy.trigger_strategy == TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST:
        requested = tl.last_of((Action.COMPACTION,))
        if requested is not None and (done is None or requested.timestamp > done.timestamp):
            done = requested
    if done is not None:
        since = done.timestamp
        deltas = sum(1 for _ in tl.iter_instants((Action.DELTA_COMMIT,), after=since))
    else:
        first = next(tl.iter_instants((Action.DELTA_COMMIT,)), None)
        if first is None:
            return TriggerDecision(False, 0, None)
        since = first.timestamp
        deltas = sum(1 for _ in tl.iter_instants((Action.DELTA_COMMIT,), since=since))
    elapsed = (now - instant_to_datetime(since, table.config.timeline_zone)).total_seconds()
    by_count = deltas >= policy.max_delta_commits
    by_time = elapsed >= policy.max_delta_seconds
    due = {TriggerStrategy.NUM_COMMITS: by_count, TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST: by_count,
           TriggerStrategy.TIME_ELAPSED: by_time,
           TriggerStrategy.NUM_AND_TIME: by_count and by_time,
           TriggerStrategy.NUM_OR_TIME: by_count or by_time}[policy.trigger_strategy]
    waiting = () if policy.compaction_plan_while_pending else tuple(waiting_compactions(table))
    return TriggerDecision(due and not waiting, deltas, since, elapsed, waiting)


def waiting_compactions(table: HudiTable) -> list[str]:
    """Compaction plans that have not started: requested, not yet inflight."""
    return [i.timestamp for i in table.timeline.pending((Action.COMPACTION,)) if i.state == State.REQUESTED]


def is_clustering(table: HudiTable, instant: Instant) -> bool:
    """A pending `clustering`, or a `replacecommit` that clusters (not an insert_overwrite)."""
    tl = table.timeline
    if instant.action == Action.CLUSTERING:
        return True
    if instant.action != Action.REPLACE_COMMIT:
        return False
    if instant.is_completed:
        return tl.commit_metadata(instant).operation_type == CLUSTER_OPERATION
    try:
        return parse_requested_replace_metadata(tl.read_plan(instant.timestamp)).clustering_plan is not None
    except (HudiError, MetadataFormatError):
        return False  # a v6 insert_overwrite may leave its requested file empty, or none


def last_clustering(table: HudiTable) -> str | None:
    """The latest clustering instant, pending or completed."""
    candidates = table.timeline.iter_instants((Action.CLUSTERING, Action.REPLACE_COMMIT), reverse=True)
    return next((i.timestamp for i in candidates if is_clustering(table, i)), None)


def clustering_trigger(table: HudiTable, policy: TablePolicy) -> TriggerDecision:
    last = last_clustering(table)
    commits = len(table.timeline.completed(WRITE_ACTIONS, after=last))
    return TriggerDecision(commits >= policy.clustering_max_commits, commits, last)
