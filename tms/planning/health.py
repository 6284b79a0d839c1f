"""A table's health score (0-100) and its reasons, decided from a digest of the table alone (no storage access,
no database): what its file groups hold, how old its oldest uncompacted delta commit is, its failed and held
plans, its clean lag and its orphan files. Each problem takes its penalty off 100, and says why in one line.

The thresholds are the table's own policy where it has one: a log backlog is measured against the compaction
trigger and the parquet file size, small files against the clustering's small-file limit, the age of the
oldest uncompacted delta commit against the freshness objective or a time-based trigger (a count trigger that
waits for commits that never come is the policy working, not a problem)."""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .policy import TablePolicy, TriggerStrategy

OK, WARNING = "ok", "warning"
HEALTHY_SCORE = 80  # at or above: ok
_TIME_STRATEGIES = (TriggerStrategy.TIME_ELAPSED, TriggerStrategy.NUM_OR_TIME, TriggerStrategy.NUM_AND_TIME)
MIN_FILES_FOR_RATIOS = 8  # fewer base files: a small-file ratio or a size skew says nothing
SMALL_FILE_RATIO = 0.8
SKEW_FACTOR = 10.0
CLEAN_LAG_FACTOR = 3  # completed writes since the last clean, in multiples of the clean trigger
# A due service unplanned for longer than its trigger: counted past the trigger twice since the planner's last
# plan or attempt of it. Its penalty alone makes the table's health a warning.
UNPLANNED_FACTOR = 2
UNPLANNED_PENALTY = 100 - HEALTHY_SCORE + 1


@dataclass(frozen=True)
class FileGroupFacts:
    partition: str
    file_id: str
    base_size: int   # 0: no base file (a slice of logs only)
    log_count: int   # log files not yet compacted into its base
    log_bytes: int


@dataclass(frozen=True)
class HealthDigest:
    """What the decision reads of a table."""

    is_mor: bool
    file_groups: Sequence[FileGroupFacts]
    oldest_uncompacted: datetime | None  # the oldest delta commit no compaction has taken yet
    writes_since_clean: int
    clean_commits: int                   # the planner's clean trigger (completed writes)
    failed_plans: int                    # the table's tasks failed for good (TaskRepo.health_counts)
    held_plans: int                      # plans held (BLOCKED tasks, held compaction plans)
    orphan_files: int = 0                # files no instant references, older than the safety window
    orphan_bytes: int = 0
    # Counted since the planner's last plan or empty attempt of the service, with no plan of it pending (None:
    # unknown, the planner has not read the table, or it does not schedule the service).
    writes_since_clean_attempt: int | None = None
    deltas_since_compaction_attempt: int | None = None
    clean_finding: str | None = None  # what the planner's last clean attempt that planned nothing found
    damaged_files: Sequence[str] = ()    # files its commits wrote that are lost or damaged (its `table_damaged`
    #                                      alert names them)
    # Archival (None: the planner does not count it for the table): the completed commits on the active timeline,
    # and their count at the planner's last archival plan or attempt (TimelineDigest.archive_overdue).
    archive_commits: int | None = None
    archive_attempted_at: int | None = None


@dataclass(frozen=True)
class Reason:
    kind: str     # log_backlog | uncompacted_age | small_files | size_skew | failed_plans | held_plans | clean_lag
    penalty: int  #   | orphan_files | unplanned | damaged_files
    message: str


@dataclass(frozen=True)
class TableHealth:
    score: int
    reasons: list[Reason] = field(default_factory=list)

    @property
    def status(self) -> str:
        return OK if self.score >= HEALTHY_SCORE else WARNING


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def table_health(digest: HealthDigest, policy: TablePolicy, now: datetime) -> TableHealth:
    reasons = [r for check in (_log_backlog, _uncompacted_age, _small_files, _size_skew, _plans, _clean_lag,
                               _unplanned, _orphans, _damaged) for r in check(digest, policy, now)]
    return TableHealth(score=max(0, 100 - sum(r.penalty for r in reasons)), reasons=reasons)


def _log_backlog(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    if not d.is_mor or not d.file_groups:
        return []
    out = []
    by_files = max(d.file_groups, key=lambda g: g.log_count)
    limit = 2 * policy.max_delta_commits
    if by_files.log_count > limit:
        out.append(Reason("log_backlog", 15, f"file group {by_files.partition or '.'}/{by_files.file_id} has "
                                             f"{by_files.log_count} log files waiting for a compaction (more than "
                                             f"twice the trigger's {policy.max_delta_commits} delta commits)"))
    by_bytes = max(d.file_groups, key=lambda g: g.log_bytes)
    if by_bytes.log_bytes > policy.parquet_max_file_size:
        out.append(Reason("log_backlog", 15, f"file group {by_bytes.partition or '.'}/{by_bytes.file_id} has "
                                             f"{_mb(by_bytes.log_bytes)} of logs waiting for a compaction (more than "
                                             f"a base file's {_mb(policy.parquet_max_file_size)})"))
    return out


def _uncompacted_age(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    if not d.is_mor or d.oldest_uncompacted is None:
        return []
    age = (now - d.oldest_uncompacted).total_seconds()
    objective = policy.freshness_max_uncompacted_seconds
    if objective:
        if age > objective:
            return [Reason("uncompacted_age", 30, f"the oldest uncompacted delta commit is {age:.0f} s old: the "
                                                  f"freshness objective ({objective} s) is missed")]
        if age > objective / 2:
            return [Reason("uncompacted_age", 10, f"the oldest uncompacted delta commit is {age:.0f} s old: more "
                                                  f"than half the freshness objective ({objective} s)")]
        return []
    if policy.trigger_strategy in _TIME_STRATEGIES and age > 2 * policy.max_delta_seconds:
        return [Reason("uncompacted_age", 20, f"the oldest uncompacted delta commit is {age:.0f} s old: more than "
                                              f"twice the time trigger's {policy.max_delta_seconds} s")]
    return []


def _base_sizes(d: HealthDigest) -> list[int]:
    return [g.base_size for g in d.file_groups if g.base_size > 0]


def _small_files(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    sizes = _base_sizes(d)
    if len(sizes) < MIN_FILES_FOR_RATIOS:
        return []
    small = sum(1 for s in sizes if s < policy.clustering_small_file_limit)
    if small / len(sizes) < SMALL_FILE_RATIO:
        return []
    return [Reason("small_files", 10, f"{small} of {len(sizes)} base files are smaller than the clustering's "
                                      f"small-file limit ({_mb(policy.clustering_small_file_limit)})")]


def _size_skew(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    sizes = _base_sizes(d)
    if len(sizes) < MIN_FILES_FOR_RATIOS:
        return []
    median = statistics.median(sizes)
    if max(sizes) <= SKEW_FACTOR * median:
        return []
    return [Reason("size_skew", 10, f"the largest base file ({_mb(max(sizes))}) is over {SKEW_FACTOR:.0f} times "
                                    f"the median ({_mb(int(median))})")]


def _plans(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    out = []
    if d.failed_plans:
        out.append(Reason("failed_plans", min(30, 10 * d.failed_plans), f"{d.failed_plans} task(s) failed for good"))
    if d.held_plans:
        out.append(Reason("held_plans", 10, f"{d.held_plans} plan(s) held, waiting for what blocks them"))
    return out


def _clean_lag(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    if d.writes_since_clean <= CLEAN_LAG_FACTOR * d.clean_commits:
        return []
    found = f"; the planner's last attempt {d.clean_finding}" if d.clean_finding else ""
    return [Reason("clean_lag", 10, f"{d.writes_since_clean} completed writes since the last clean (the clean "
                                    f"trigger is {d.clean_commits}){found}")]


def _unplanned(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    """A due service the planner has neither planned nor attempted for longer than its trigger (the monitor's
    `not_scheduled` alerts on it too): the table is not ok, whatever else it scores."""
    out = []
    writes = d.writes_since_clean_attempt
    if writes is not None and writes >= UNPLANNED_FACTOR * d.clean_commits:
        out.append(Reason("unplanned", UNPLANNED_PENALTY,
                          f"clean due and not planned: {writes} completed writes since the planner's last clean or "
                          f"clean attempt (the trigger is {d.clean_commits})"))
    deltas = d.deltas_since_compaction_attempt
    if (d.is_mor and deltas is not None and policy.trigger_strategy != TriggerStrategy.TIME_ELAPSED
            and deltas >= UNPLANNED_FACTOR * policy.max_delta_commits):
        out.append(Reason("unplanned", UNPLANNED_PENALTY,
                          f"compaction due and not planned: {deltas} delta commits since the planner's last "
                          f"compaction or compaction attempt (the trigger is {policy.max_delta_commits})"))
    if d.archive_commits is not None and policy.archive_automatic and _archive_overdue(d, policy):
        out.append(Reason("unplanned", UNPLANNED_PENALTY,
                          f"archival due and not planned: {d.archive_commits} completed commits on the active "
                          f"timeline (hoodie.keep.max.commits is {policy.archive_max_commits})"))
    return out


def _archive_overdue(d: HealthDigest, policy: TablePolicy) -> bool:
    from .digest import TimelineDigest  # the digest's own rule (it imports this module's neighbours)
    return TimelineDigest(commits=d.archive_commits or 0,
                          archive_attempted_at=d.archive_attempted_at).archive_overdue(policy)


def _orphans(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    if not d.orphan_files:
        return []
    return [Reason("orphan_files", 10, f"{d.orphan_files} orphan file(s) ({_mb(d.orphan_bytes)}) that no instant "
                                       "references, older than the safety window")]


def _damaged(d: HealthDigest, policy: TablePolicy, now: datetime) -> list[Reason]:
    """A table that lost files its commits wrote reads wrong or not at all: a warning whatever else is well."""
    if not d.damaged_files:
        return []
    return [Reason("damaged_files", 60, f"{len(d.damaged_files)} file(s) its commits wrote are lost or damaged "
                                        f"(e.g. {d.damaged_files[0]}): see its table_damaged alert")]
