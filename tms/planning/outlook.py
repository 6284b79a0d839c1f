"""The planner's outlook on each service of a table: whether its trigger holds, when it is next due, and in one
line why it is not planned now — decided from the table's digest (what the planner counted, its last empty
attempts and what it found then), so that the table's page and `GET /api/v1/tables/{id}` show the planner's
own reasons without recomputing them. Kept with the digest in the table's `planner_state` ("services")."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from tms.table_service import TableService

from .decisions import PlannerOptions
from .digest import ALWAYS, TimelineDigest
from .failed_writes import heartbeat_tolerance_seconds
from .policy import TablePolicy, TriggerStrategy

SERVICES = (TableService.COMPACTION, TableService.CLUSTERING, TableService.CLEAN, TableService.ROLLBACK,
            TableService.ARCHIVE)
UNREAD = "the planner has not read the table yet (its first event or the reconciliation scan does)"


@dataclass(frozen=True)
class ServiceOutlook:
    scheduled: bool                 # the planner schedules this service (TMS_PLANNER_SERVICES, the table's type)
    due: bool                       # its trigger held when the planner last looked: the next pass attempts it
    next_due: datetime | None       # when time alone makes it due; None: due already, or only writes make it due
    writes_until_due: int | None    # completed writes (delta commits for compaction) its trigger still needs
    reason: str                     # why it is not planned now (or that it is due), in one line

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["next_due"] = self.next_due.isoformat() if self.next_due else None
        return out


def outlook(digest: TimelineDigest, policy: TablePolicy, options: PlannerOptions, now: datetime, *,
            is_mor: bool) -> dict[str, ServiceOutlook]:
    return {TableService.COMPACTION: _compaction(digest, policy, options, now, is_mor),
            TableService.CLUSTERING: _clustering(digest, policy, options),
            TableService.CLEAN: _clean(digest, options),
            TableService.ROLLBACK: _rollback(digest, policy, options, now),
            TableService.ARCHIVE: _archive(digest, policy, options)}


def stored_outlook(digest: TimelineDigest | None, policy: TablePolicy, options: PlannerOptions, now: datetime, *,
                   is_mor: bool) -> dict[str, dict[str, object]]:
    """The outlook as `planner_state["services"]` keeps it (JSON); with no digest, every service unread."""
    if digest is None:
        return {str(s): ServiceOutlook(s in options.services, False, None, None, UNREAD).to_json()
                for s in SERVICES}
    return {str(s): o.to_json() for s, o in outlook(digest, policy, options, now, is_mor=is_mor).items()}


def _unscheduled(service: str) -> ServiceOutlook:
    hint = "; clustering is opt-in, as in Hudi" if service == TableService.CLUSTERING else ""
    return ServiceOutlook(False, False, None, None,
                          f"not scheduled: this planner does not schedule {service} (TMS_PLANNER_SERVICES){hint}")


def _since(digest: TimelineDigest, service: str, last: str | None, what: str) -> str:
    """Where the trigger counts from, and what the planner found at its last empty attempt."""
    attempt = digest.attempts.get(service)
    finding = digest.findings.get(service)
    if attempt is not None and attempt >= (last or ""):
        found = f" ({finding[1]})" if finding else ""
        return f"since the last {what} attempt at {attempt}{found}"
    return f"since the last {what} ({last})" if last else "since the table began"


def _found(digest: TimelineDigest, service: str) -> str:
    """A finding not told by `_since` (a refusal; a forced attempt): the last thing the planner found."""
    finding = digest.findings.get(service)
    attempt = digest.attempts.get(service)
    return f"; at {finding[0]}: {finding[1]}" if finding and finding[0] != attempt else ""


def _scoped(digest: TimelineDigest, service: str) -> str:
    """How the last plan TMS made of `service` chose its partitions (a full pass and why, or incremental)."""
    scope = digest.scopes.get(service)
    return f"; the last plan ({scope[0]}) was {scope[1]}" if scope else ""


def _counted(digest: TimelineDigest, service: str, needed: int, since: str, unit: str, trigger: str
             ) -> ServiceOutlook:
    count = len(digest.counted.get(service) or [])
    counted = f"{count} {unit} {since}"
    found = _found(digest, service) + _scoped(digest, service)
    if count >= needed:
        return ServiceOutlook(True, True, None, 0, f"due: {counted} (the trigger is {needed}, {trigger}); "
                                                     f"the planner's next pass attempts it{found}")
    return ServiceOutlook(True, False, None, needed - count,
                          f"{counted}: {needed - count} more before the next attempt (the trigger is {needed}, "
                          f"{trigger}){found}")


def _compaction(digest: TimelineDigest, policy: TablePolicy, options: PlannerOptions, now: datetime,
                is_mor: bool) -> ServiceOutlook:
    if TableService.COMPACTION not in options.services:
        return _unscheduled(TableService.COMPACTION)
    if not is_mor:
        return ServiceOutlook(False, False, None, None, "not needed: a COPY_ON_WRITE table has no log files")
    deltas = digest.counted.get(TableService.COMPACTION) or []
    strategy = policy.trigger_strategy
    commits, seconds = f"{policy.max_delta_commits} delta commits", f"{policy.max_delta_seconds} s"
    trigger = {TriggerStrategy.NUM_COMMITS: commits, TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST: commits,
               TriggerStrategy.TIME_ELAPSED: seconds, TriggerStrategy.NUM_AND_TIME: f"{commits} and {seconds}",
               TriggerStrategy.NUM_OR_TIME: f"{commits} or {seconds}"}[strategy]
    by_count = strategy != TriggerStrategy.TIME_ELAPSED
    counted = f"{len(deltas)} delta commits {_since(digest, TableService.COMPACTION, digest.compacted, 'compaction')}"
    due = digest.compaction_may_be_due(policy, now)
    due_at = digest.compaction_due_at(policy)
    next_due = None if due_at == ALWAYS else due_at
    more = max(policy.max_delta_commits - len(deltas), 0) if by_count else None
    found = _found(digest, TableService.COMPACTION) + _scoped(digest, TableService.COMPACTION)
    if due:
        return ServiceOutlook(True, True, None, more,
                              f"due: {counted} (the trigger is {trigger}, {strategy}); the planner's next pass "
                              f"attempts it{found}")
    when = f"due at {next_due:%Y-%m-%d %H:%M:%S} UTC" if next_due else f"{more} more delta commits before it is due"
    return ServiceOutlook(True, False, next_due, more,
                          f"{counted}: {when} (the trigger is {trigger}, {strategy}){found}")


def _clustering(digest: TimelineDigest, policy: TablePolicy, options: PlannerOptions) -> ServiceOutlook:
    if TableService.CLUSTERING not in options.services:
        return _unscheduled(TableService.CLUSTERING)
    since = _since(digest, TableService.CLUSTERING, digest.clustered, "clustering")
    return _counted(digest, TableService.CLUSTERING, policy.clustering_max_commits, since, "completed writes",
                    "hoodie.clustering.async.max.commits")


def _clean(digest: TimelineDigest, options: PlannerOptions) -> ServiceOutlook:
    if TableService.CLEAN not in options.services:
        return _unscheduled(TableService.CLEAN)
    since = _since(digest, TableService.CLEAN, digest.cleaned, "clean")
    return _counted(digest, TableService.CLEAN, options.clean_commits, since, "completed writes",
                    "TMS_PLANNER_CLEAN_COMMITS")


def _archive(digest: TimelineDigest, policy: TablePolicy, options: PlannerOptions) -> ServiceOutlook:
    if TableService.ARCHIVE not in options.services:
        return _unscheduled(TableService.ARCHIVE)
    if not policy.archive_automatic:
        return ServiceOutlook(False, False, None, None,
                              "not scheduled: the table's policy turns archival off (hoodie.archive.automatic=false); "
                              "archived on request only (tms trigger TABLE --service archive)")
    count, limit = digest.commits, policy.archive_max_commits
    counted = f"{count} completed commits on the active timeline"
    trigger = f"the limit is {limit}, hoodie.keep.max.commits"
    found = _found(digest, TableService.ARCHIVE)
    if digest.archive_may_be_due(policy):
        return ServiceOutlook(True, True, None, 0,
                              f"due: {counted} ({trigger}); the planner's next pass attempts it{found}")
    attempted = digest.archive_attempted_at
    if count > limit and attempted is not None:  # over the limit, but planned or attempted at the last look
        more = attempted + limit - policy.archive_min_commits - count
        finding = digest.findings.get(TableService.ARCHIVE)
        if finding is None:  # planned: its task archives what is due when it runs
            return ServiceOutlook(True, False, None, more,
                                  f"{counted} ({trigger}): an archive task was planned at {attempted} completed "
                                  f"commits; {more} more before the next attempt")
        why = f" ({finding[1]})"
        return ServiceOutlook(True, False, None, more,
                              f"{counted} ({trigger}), but the last archive attempt at "
                              f"{digest.attempts.get(TableService.ARCHIVE)} planned nothing{why}: {more} more "
                              "before the next attempt")
    more = limit - count + 1
    return ServiceOutlook(True, False, None, more, f"{counted}: {more} more before it is due ({trigger})")


def _rollback(digest: TimelineDigest, policy: TablePolicy, options: PlannerOptions, now: datetime) -> ServiceOutlook:
    if TableService.ROLLBACK not in options.services:
        return _unscheduled(TableService.ROLLBACK)
    if not digest.pending_writes:
        return ServiceOutlook(True, False, None, None, f"nothing to roll back: no pending write"
                                                       f"{_found(digest, TableService.ROLLBACK)}")
    expiry = digest.first_write_expiry(heartbeat_tolerance_seconds(policy))
    pending = f"{len(digest.pending_writes)} pending write(s)"
    if expiry is not None and now >= expiry:
        return ServiceOutlook(True, True, None, None,
                              f"due: {pending}, the first past its writer's heartbeat tolerance; the planner's "
                              f"next pass rolls back those whose writer is gone")
    when = f"at {expiry:%Y-%m-%d %H:%M:%S} UTC" if expiry else "never (a tolerance past the calendar's end)"
    return ServiceOutlook(True, False, expiry, None,
                          f"{pending}: the first is rolled back only if its writer's heartbeat is still silent {when}")
