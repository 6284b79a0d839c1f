"""When to plan: what a planning pass over a table should attempt, decided from the table's digest alone
(no storage access), for each of the three ways a table comes up: its new events, the periodic trigger,
and the reconciliation scan."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.timeline.instant import Action
from tms.table_service import TableService

from .digest import ALWAYS, TimelineDigest
from .failed_writes import heartbeat_tolerance_seconds
from .incremental import full_pass_period
from .policy import TablePolicy

# A requested instant of these actions is a plan someone else scheduled: adopt it.
_PLAN_ACTIONS = (Action.COMPACTION, Action.CLUSTERING, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK)


@dataclass(frozen=True)
class PlannerOptions:
    """What the planner schedules, service-wide."""

    services: frozenset[str]  # of compaction, clustering, clean, rollback, archive (TMS_PLANNER_SERVICES)
    clean_commits: int        # completed writes since the last clean (or clean attempt) before the next
    storage_roots: tuple[str, ...] = ()  # a table found outside them (its folder replaced by a link) is not planned
    full_pass_hours: float = 24.0  # TMS_PLANNER_FULL_PASS_HOURS
    context: HudiContext = DEFAULT_CONTEXT  # what tables are read with, and the zone of LOCAL timelines

    @property
    def full_pass_every(self) -> timedelta | None:
        """How often a compaction or clustering plan looks at the whole table (None: always)."""
        return full_pass_period(self.full_pass_hours)

    def services_for(self, policy: TablePolicy) -> frozenset[str]:
        """What the planner schedules on its own for a table under `policy` (see `scheduled_services`)."""
        return scheduled_services(self.services, policy)


def scheduled_services(services: frozenset[str], policy: TablePolicy) -> frozenset[str]:
    """What the planner schedules on its own for a table under `policy`: `services` (TMS_PLANNER_SERVICES), with
    clustering as the policy asks (TablePolicy.clustering_asked): on where it asks for it, off where it turns it
    off, else as `services` says."""
    if not policy.archive_automatic:
        services = services - {TableService.ARCHIVE.value}
    asked = policy.clustering_asked
    if asked is None:
        return services
    clustering = {TableService.CLUSTERING.value}
    return services | clustering if asked else services - clustering


def not_scheduled_reason(service: str, services: frozenset[str], policy: TablePolicy) -> str:
    """Why the planner does not schedule `service` on its own for a table under `policy` (empty when it does);
    an operator's request (`tms schedule`, POST /api/v1/tables/{id}:plan) plans it all the same."""
    if service in scheduled_services(services, policy):
        return ""
    if service == TableService.CLUSTERING:
        if policy.clustering_asked is False:
            return "clustering is turned off by the table's policy (hoodie.clustering.async.enabled=false)"
        return ("clustering is not asked for by the table's policy (hoodie.clustering.async.enabled=true in its "
                "policy or its template turns it on)")
    if service == TableService.ARCHIVE and not policy.archive_automatic and service in services:
        return "archival is turned off by the table's policy (hoodie.archive.automatic=false): archived on request only"
    return f"{service} is not in TMS_PLANNER_SERVICES"


@dataclass(frozen=True)
class Work:
    """What one planning pass attempts. Every pass also adopts unknown plans and syncs held ones."""

    # compaction, clustering, clean, archive: planned if the library finds them due
    services: frozenset[str] = frozenset()
    rollbacks: bool = False                 # plan the rollback of writes whose writer is gone
    reconcile: bool = False                 # run the pass for adoption and held plans alone

    def __bool__(self) -> bool:
        return bool(self.services or self.rollbacks or self.reconcile)


class EventLike(Protocol):
    """What decisions read of a stored event (tms.db.EventRecord)."""

    instant: str
    action: str
    state: str


def _due_services(digest: TimelineDigest, policy: TablePolicy, now: datetime, options: PlannerOptions,
                  is_mor: bool) -> frozenset[str]:
    """The digest counts for the planner's services only: a service it does not count is never due."""
    due = set()
    if is_mor and digest.compaction_may_be_due(policy, now):
        due.add(TableService.COMPACTION)
    if digest.clustering_may_be_due(policy):
        due.add(TableService.CLUSTERING)
    if digest.clean_may_be_due(options.clean_commits):
        due.add(TableService.CLEAN)
    if TableService.ARCHIVE in options.services_for(policy) and digest.archive_may_be_due(policy):
        due.add(TableService.ARCHIVE)
    return frozenset(due)


def on_events(digest: TimelineDigest, events: Iterable[EventLike], policy: TablePolicy, now: datetime,
              options: PlannerOptions, *, is_mor: bool) -> Work:
    """After the events were observed: the services they made due, and a reconciliation when a plan was
    scheduled elsewhere or a held plan's blocker may have resolved (completed, or removed by a rollback)."""
    events = list(events)
    blockers = digest.blockers()
    reconcile = any(
        (e.state == "requested" and e.action in _PLAN_ACTIONS)
        or (e.state == "completed" and (e.instant in blockers or (blockers and e.action == Action.ROLLBACK)))
        for e in events)
    return Work(services=_due_services(digest, policy, now, options, is_mor), reconcile=reconcile)


def on_tick(digest: TimelineDigest, policy: TablePolicy, now: datetime, options: PlannerOptions, *,
            is_mor: bool) -> Work:
    """The periodic trigger: what time alone may have made due — time-based compaction triggers, writers
    whose heartbeat may have expired, and held plans (whose blockers our own rollbacks may have removed,
    which no event reports)."""
    expiry = _rollbacks_due_at(digest, policy, options)
    return Work(services=_due_services(digest, policy, now, options, is_mor),
                rollbacks=expiry is not None and now >= expiry, reconcile=bool(digest.held))


def next_tick_at(digest: TimelineDigest | None, policy: TablePolicy, options: PlannerOptions, *,
                 is_mor: bool) -> datetime | None:
    """The earliest time at which `on_tick` returns work for this digest: ALWAYS (or another past moment)
    when it already does, None when time alone never makes anything due (then only events, whose pass
    stores a new digest and its time, or the scan can). No digest (a table never read): None, the scan's
    business. Stored with the digest as the table's `tick_due_at`, which the periodic trigger looks up."""
    if digest is None:
        return None
    if digest.held:
        return ALWAYS
    due: list[datetime | None] = [_rollbacks_due_at(digest, policy, options)]
    if is_mor:
        due.append(digest.compaction_due_at(policy))
    if digest.clustering_may_be_due(policy) or digest.clean_may_be_due(options.clean_commits) or (
            TableService.ARCHIVE in options.services_for(policy) and digest.archive_may_be_due(policy)):
        due.append(ALWAYS)
    return min((d for d in due if d is not None), default=None)


def _rollbacks_due_at(digest: TimelineDigest, policy: TablePolicy, options: PlannerOptions) -> datetime | None:
    """When the periodic trigger plans rollbacks: once the first pending write seen may have outlived its
    writer's heartbeat (only then can any have)."""
    if TableService.ROLLBACK not in options.services:
        return None
    return digest.first_write_expiry(heartbeat_tolerance_seconds(policy))


def on_scan(digest: TimelineDigest, policy: TablePolicy, now: datetime, options: PlannerOptions, *,
            is_mor: bool) -> Work:
    """The reconciliation scan, on a digest just rebuilt from the timeline: everything."""
    return Work(services=_due_services(digest, policy, now, options, is_mor),
                rollbacks=TableService.ROLLBACK in options.services, reconcile=True)
