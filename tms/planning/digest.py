"""What the planner remembers of a table's timeline between full reads, kept in the table row's
`planner_state`: enough to tell from an event alone whether a plan may be due. Handling an event thus
never lists or parses the timeline, and costs the same on a timeline of 100 instants as on one of 10,000
(a timeline reload parses only new files, but still lists every name).

The digest mirrors the library's trigger rules (triggers.py) as a pre-check that errs on the side of
"may be due": a duplicate or stale hint at worst costs a planning pass, which decides exactly on the
reloaded timeline and rebuilds the digest from it. With every event seen it never misses a due plan;
events that never came are the reconciliation scan's business, which rebuilds the digest too.

An attempt that found a plan due but nothing to plan (every file group already in a pending plan,
nothing to clean) re-arms its trigger: the next attempt waits until the trigger is due again, counted
from that attempt, so such a table is not planned again on every event. Counted from that attempt means
the writes completed after it, by when they completed: the instants newer than the newest one at the
attempt, and the writes, compactions and clusterings that were pending at the attempt (`awaited`) once
they complete — a table service planned in the same pass completes after the attempt with an older
instant time, and it is what most often makes files cleanable."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import islice
from typing import Any

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, instant_to_datetime
from tms.hudi.timeline.timeline import WRITE_ACTIONS, Timeline
from tms.hudi.timeline.zone import is_utc_timeline, zone_of
from tms.table_service import TableService

from .compensation import held_compactions
from .planned import Planned
from .policy import TablePolicy, TriggerStrategy
from .rollback_targets import rollback_targets
from .triggers import last_clustering

FORMAT = 4  # 3: timeline_utc; 4: awaited, findings (scopes: read where present)
# Instants remembered per trigger: a count past this is "many" (no trigger needs more), and the
# oldest entry is kept because the time-based compaction trigger counts from it.
MAX_LISTED = 1000
COMPLETED = "completed"
# "Due whatever the time": a moment before any instant (what `compaction_due_at` says of a count reached).
ALWAYS = datetime(1970, 1, 1, tzinfo=UTC)
# The completed commits Hudi's archiver counts (tms.hudi.table.archival.COMMITS).
ARCHIVED_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)
COUNTED = (TableService.COMPACTION, TableService.CLUSTERING, TableService.CLEAN)  # the services with a counting trigger


def _capped(instants: list[str]) -> list[str]:
    return instants if len(instants) <= MAX_LISTED else instants[:1] + instants[-(MAX_LISTED - 1):]


@dataclass
class TimelineDigest:
    compacted: str | None = None  # last completed commit or replacecommit: Hudi counts delta commits after it
    clustered: str | None = None  # last clustering instant, pending or completed
    cleaned: str | None = None    # last clean instant, in any state
    # Per counted service, the instants its trigger counts since its last instant (or empty attempt):
    # compaction the delta commits in any state, clustering and clean the completed writes. Only the
    # services the planner schedules are counted, which keeps the digest small.
    counted: dict[str, list[str]] = field(default_factory=dict)
    pending_writes: dict[str, float] = field(default_factory=dict)  # requested/inflight -> first seen (epoch s)
    held: dict[str, list[str]] = field(default_factory=dict)  # held v6 compaction plan -> its blockers
    attempts: dict[str, str] = field(default_factory=dict)    # service -> newest instant at an empty attempt
    # Per counted service with a completed-writes trigger, the instants pending at its last empty attempt:
    # each counts once it completes (see the module's docstring).
    awaited: dict[str, list[str]] = field(default_factory=dict)
    # Per service, what the planner found at its last attempt that planned nothing (nothing to plan and why,
    # a refusal, a failure): (instant of the newest instant then, the finding), shown with the outlook.
    findings: dict[str, list[str]] = field(default_factory=dict)
    # Per service, how the last plan TMS made chose its partitions: (its instant, a full pass or incremental and
    # why; tms.planning.incremental), shown with the outlook.
    scopes: dict[str, list[str]] = field(default_factory=dict)
    scanned_at: float | None = None  # last reconciliation with the timeline (epoch s)
    timeline_utc: bool = False       # the table's instant times are UTC, else LOCAL (timeline_zone)
    # Archival (counted only when the planner schedules it): the completed commits on the active timeline (as
    # rebuilt, plus the completed writes seen since), and their count at the last archival attempt that archived
    # nothing (Hudi's rules held the oldest back): the next attempt waits for more.
    commits: int = 0
    archive_attempted_at: int | None = None
    # The oldest instant pending at that attempt (Hudi's rules archive nothing from it on): once it completes or
    # leaves the timeline, archival is due again at once. A busy table's completed compaction releases every
    # commit after its plan; waiting for more commits let the timeline stand over its limit meanwhile.
    archive_held_by: str | None = None
    # The zone of LOCAL timelines, as the reader's context passes it (None: this host's); not stored.
    local_zone: tzinfo | None = field(default=None, compare=False, repr=False)

    # --- storage in planner_state -------------------------------------------------------------------
    @classmethod
    def from_state(cls, state: dict[str, Any] | None, services: frozenset[str],
                   local_zone: tzinfo | None = None) -> TimelineDigest | None:
        """The stored digest, or None if there is none (a table never planned), it is of another format,
        or it counts for other services than the planner's now; `local_zone`: that of LOCAL timelines."""
        if not state or state.get("format") != FORMAT or set(state["counted"]) != _counted(services):
            return None
        # Copies: the row's own value must stay as loaded, or its change would go unnoticed.
        return cls(compacted=state["compacted"], clustered=state["clustered"], cleaned=state["cleaned"],
                   counted={k: list(v) for k, v in state["counted"].items()},
                   pending_writes=dict(state["pending_writes"]), held={k: list(v) for k, v in state["held"].items()},
                   attempts=dict(state["attempts"]), awaited={k: list(v) for k, v in state["awaited"].items()},
                   findings={k: list(v) for k, v in state["findings"].items()},
                   scopes={k: list(v) for k, v in state.get("scopes", {}).items()}, scanned_at=state["scanned_at"],
                   timeline_utc=state["timeline_utc"], commits=state.get("commits", 0),
                   archive_attempted_at=state.get("archive_attempted_at"),
                   archive_held_by=state.get("archive_held_by"), local_zone=local_zone)

    def to_state(self) -> dict[str, Any]:
        # the row keeps it; this digest is not used after
        return {"format": FORMAT, **{k: v for k, v in vars(self).items() if k != "local_zone"}}

    # --- building from the timeline -----------------------------------------------------------------
    @classmethod
    def of(cls, table: HudiTable, previous: TimelineDigest | None, now: datetime,
           services: frozenset[str]) -> TimelineDigest:
        """The digest of the table's (freshly reloaded) timeline, counting for `services`; attempts, first
        sightings of pending writes and the last scan carry over from `previous`. Built from the
        timeline's indexes: it costs the instants it counts (at most MAX_LISTED per service) and the
        pending ones, not the timeline's length."""
        tl = table.timeline
        out = cls(attempts=dict(previous.attempts) if previous else {},
                  findings={k: list(v) for k, v in previous.findings.items()} if previous else {},
                  scopes={k: list(v) for k, v in previous.scopes.items()} if previous else {},
                  scanned_at=previous.scanned_at if previous else None,
                  timeline_utc=is_utc_timeline(table.config.props), local_zone=table.config.local_zone)
        out.compacted = _timestamp(tl.last_of((Action.COMMIT, Action.REPLACE_COMMIT), completed=True))
        out.cleaned = _timestamp(tl.last_of((Action.CLEAN,)))
        counted = _counted(services)
        out.clustered = last_clustering(table) if TableService.CLUSTERING in counted else None
        for service in counted:
            completed_only = service != TableService.COMPACTION  # compaction counts delta commits in any state
            actions = (Action.DELTA_COMMIT,) if service == TableService.COMPACTION else WRITE_ACTIONS
            listed = _listed_after(tl, actions, out._base(service), completed_only)
            if completed_only and previous is not None and out._counts_from_attempt(service):
                # What was pending at the attempt and is still on the timeline stays awaited; what completed counts.
                out.awaited[service] = [ts for ts in previous.awaited.get(service, ()) if tl.states_of(ts)]
                done = [ts for ts in out.awaited[service] if _completed_at(tl, ts)]
                listed = _capped(sorted(done + listed))
            out.counted[service] = listed
        pending_writes = [i.timestamp for i in tl.pending((Action.COMMIT, Action.DELTA_COMMIT))]
        condemned = rollback_targets(table, after=pending_writes[0]) if pending_writes else set()
        seen = previous.pending_writes if previous else {}
        out.pending_writes = {ts: seen.get(ts, now.timestamp()) for ts in pending_writes if ts not in condemned}
        out.held = held_compactions(table)
        if TableService.ARCHIVE in services:
            out.commits = sum(1 for i in tl.iter_instants(ARCHIVED_COMMITS) if i.is_completed)
            attempted = previous.archive_attempted_at if previous else None
            held_by = previous.archive_held_by if previous else None
            released = held_by is not None and not _pending_at(tl, held_by)
            if attempted is not None and out.commits >= attempted and not released:
                out.archive_attempted_at, out.archive_held_by = attempted, held_by
        return out

    # --- following events ---------------------------------------------------------------------------
    def observe(self, instant: str, action: str, state: str, now: datetime) -> None:
        """Take one event (an instant of `action` reached `state`) into account."""
        if action in WRITE_ACTIONS:
            if state == COMPLETED:
                self.pending_writes.pop(instant, None)  # (an awaited instant is counted: _trim keeps it)
                self._count(TableService.CLUSTERING, instant)
                self._count(TableService.CLEAN, instant)
                self.commits += 1
                if action != Action.DELTA_COMMIT and instant > (self.compacted or ""):
                    self.compacted = instant
            elif action != Action.REPLACE_COMMIT:  # a pending v6 replacecommit may be a clustering plan
                self.pending_writes.setdefault(instant, now.timestamp())
            if action == Action.DELTA_COMMIT:
                self._count(TableService.COMPACTION, instant)
        elif action == Action.CLUSTERING:
            self.clustered = max(self.clustered or "", instant)
        elif action == Action.CLEAN:
            self.cleaned = max(self.cleaned or "", instant)
        if state == COMPLETED:
            self.released(instant)
        self._trim()

    def released(self, instant: str) -> None:
        """The instant `instant` completed: if it is the plan that held archival back, archival is due again."""
        if instant == self.archive_held_by:
            self.archive_attempted_at = self.archive_held_by = None

    def attempted(self, service: str, newest_instant: str, pending: Iterable[str] = (), finding: str = "",
                  held_by: str | None = None) -> None:
        """`service` was found due and planned nothing (`finding` says why): re-arm its trigger from the newest
        instant on the timeline (instant times, not the planner's clock: writers' clocks need not agree with
        it) and the instants then `pending`, each counted once it completes. An archival's: `held_by` the oldest
        pending compaction or clustering plan then, whose completion makes it due again."""
        self.attempts[service] = newest_instant
        if service == TableService.ARCHIVE:
            self.archive_attempted_at = self.commits
            self.archive_held_by = held_by
        if service in self.counted and service != TableService.COMPACTION:
            self.awaited[service] = sorted(ts for ts in pending if ts <= newest_instant)
            self.counted[service] = []  # counted from the attempt on
        self.found(service, newest_instant, finding)
        self._trim()

    def found(self, service: str, newest_instant: str, finding: str) -> None:
        """Keep what the planner found of `service` at a pass that planned none (shown with its outlook)."""
        if finding:
            self.findings[service] = [newest_instant, finding]

    def planned(self, service: str) -> None:
        """A plan of `service` was recorded: what was found before it no longer holds. An archival counts from it
        as from an attempt (its task archives what is due when it runs)."""
        self.findings.pop(service, None)
        if service == TableService.ARCHIVE:
            self.archive_attempted_at, self.archive_held_by = self.commits, None

    def scoped(self, planned: Planned) -> None:
        """Keep how a compaction or clustering plan TMS made chose its partitions (shown with its outlook)."""
        if planned.scope:
            self.scopes[planned.service] = [planned.instant, planned.scope]

    def _count(self, service: str, instant: str) -> None:
        instants = self.counted.get(service)
        if instants is not None and instant not in instants:  # a duplicate hint counts once
            instants.append(instant)
            instants.sort()

    def _base(self, service: str) -> str:
        """Where a trigger counts from: the last instant of the service, or its last empty attempt."""
        last = {TableService.COMPACTION: self.compacted, TableService.CLUSTERING: self.clustered,
                TableService.CLEAN: self.cleaned}[TableService(service)]
        return max(last or "", self.attempts.get(service, ""))

    def _counts_from_attempt(self, service: str) -> bool:
        """Whether `service`'s trigger counts from an empty attempt (not from an instant of the service)."""
        attempt = self.attempts.get(service)
        return attempt is not None and self._base(service) == attempt

    def _trim(self) -> None:
        for service in [s for s in self.awaited if not self._counts_from_attempt(s)]:
            del self.awaited[service]  # an instant of the service came since: it counts from that
        for service, instants in self.counted.items():
            base, awaited = self._base(service), set(self.awaited.get(service, ()))
            self.counted[service] = _capped([i for i in instants if i > base or i in awaited])

    @property
    def zone(self) -> tzinfo:
        """The zone of the table's instant times."""
        return zone_of(self.timeline_utc, self.local_zone)

    # --- the pre-checks -----------------------------------------------------------------------------
    def _compaction_count(self) -> tuple[list[str] | None, str | None]:
        """The delta commits the compaction trigger counts (None: not counted) and the instant its time bound
        counts from (the last compaction or empty attempt, else the first of them; None: nothing yet)."""
        deltas = self.counted.get(TableService.COMPACTION)
        if deltas is None:
            return None, None
        return deltas, self._base(TableService.COMPACTION) or (deltas[0] if deltas else None)

    def compaction_may_be_due(self, policy: TablePolicy, now: datetime) -> bool:
        """Hudi's compaction trigger (triggers.compaction_trigger) on what the digest knows."""
        deltas, since = self._compaction_count()
        if deltas is None or since is None:
            return False
        by_count = len(deltas) >= policy.max_delta_commits
        elapsed_at = _elapsed_at(since, policy, self.zone)
        by_time = elapsed_at is not None and now >= elapsed_at
        # NUM_COMMITS_AFTER_LAST_REQUEST counts from the last compaction request, which the digest does not
        # keep: the delta commits since the last completed compaction are an upper bound of those.
        return {TriggerStrategy.NUM_COMMITS: by_count, TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST: by_count,
                TriggerStrategy.TIME_ELAPSED: by_time,
                TriggerStrategy.NUM_AND_TIME: by_count and by_time,
                TriggerStrategy.NUM_OR_TIME: by_count or by_time}[policy.trigger_strategy]

    def compaction_due_at(self, policy: TablePolicy) -> datetime | None:
        """The earliest time at which `compaction_may_be_due` holds: ALWAYS when the count alone makes it due,
        None when it never will by time alone (only new delta commits, which events report, can)."""
        deltas, since = self._compaction_count()
        if deltas is None or since is None:
            return None
        by_count = len(deltas) >= policy.max_delta_commits
        by_time = _elapsed_at(since, policy, self.zone)
        return {TriggerStrategy.NUM_COMMITS: ALWAYS if by_count else None,
                TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST: ALWAYS if by_count else None,
                TriggerStrategy.TIME_ELAPSED: by_time,
                TriggerStrategy.NUM_AND_TIME: by_time if by_count else None,
                TriggerStrategy.NUM_OR_TIME: ALWAYS if by_count else by_time}[policy.trigger_strategy]

    def compaction_due_since(self, policy: TablePolicy) -> datetime | None:
        """Since when the compaction trigger (compaction_may_be_due) holds on what the digest knows: the
        instant time of the delta commit that reached the count, or the moment the time bound passed
        (maybe in the future), as the trigger strategy combines them; None while the count is short for a
        strategy that needs it. Past MAX_LISTED delta commits the count is reached later than told (errs
        towards "not yet")."""
        deltas, since = self._compaction_count()
        if deltas is None or since is None:
            return None
        by_count = instant_to_datetime(deltas[policy.max_delta_commits - 1], self.zone) \
            if len(deltas) >= policy.max_delta_commits else None
        by_time = _elapsed_at(since, policy, self.zone)
        strategy = policy.trigger_strategy
        if strategy == TriggerStrategy.TIME_ELAPSED:
            return by_time
        if strategy == TriggerStrategy.NUM_OR_TIME:
            return min(by_count, by_time or by_count) if by_count else by_time
        if strategy == TriggerStrategy.NUM_AND_TIME:
            return max(by_count, by_time) if by_count and by_time else None
        return by_count

    def clustering_may_be_due(self, policy: TablePolicy) -> bool:
        return len(self.counted.get(TableService.CLUSTERING, ())) >= policy.clustering_max_commits

    def clean_may_be_due(self, every_commits: int) -> bool:
        return len(self.counted.get(TableService.CLEAN, ())) >= every_commits

    def archive_may_be_due(self, policy: TablePolicy) -> bool:
        """Hudi's archival trigger on what the digest knows: more completed commits than `hoodie.keep.max.commits`
        on the active timeline; after an attempt that archived nothing, once as many more have completed as an
        archival would leave (max - min)."""
        if self.commits <= policy.archive_max_commits:
            return False
        attempted = self.archive_attempted_at
        return attempted is None or self.commits >= attempted + policy.archive_max_commits - policy.archive_min_commits

    def archive_overdue(self, policy: TablePolicy) -> bool:
        """Whether archival has been due (archive_may_be_due) for as many more completed commits again as one
        archival removes (max - min): a planner that handled those commits should have attempted it."""
        batch = policy.archive_max_commits - policy.archive_min_commits
        attempted = self.archive_attempted_at
        due_from = policy.archive_max_commits + 1 if attempted is None else attempted + batch
        return self.commits > policy.archive_max_commits and self.commits >= due_from + batch

    def blockers(self) -> set[str]:
        return {b for blockers in self.held.values() for b in blockers}

    def first_write_expiry(self, tolerance_seconds: float) -> datetime | None:
        """When the first pending write seen may have outlived its writer's heartbeat (`tolerance_seconds`
        after its first sighting); None when no write is pending."""
        if not self.pending_writes:
            return None
        try:
            return datetime.fromtimestamp(min(self.pending_writes.values()), UTC) + timedelta(seconds=tolerance_seconds)
        except OverflowError:  # a tolerance past the calendar's end: never
            return None


def _elapsed_at(since: str, policy: TablePolicy, zone: tzinfo) -> datetime | None:
    """When `max_delta_seconds` will have passed since the instant `since` (a wall-clock time in `zone`); None
    past the calendar's end."""
    try:
        return instant_to_datetime(since, zone) + timedelta(seconds=policy.max_delta_seconds)
    except OverflowError:
        return None


def _counted(services: frozenset[str]) -> set[str]:
    return set(services) & set(COUNTED)


def _completed_at(tl: Timeline, timestamp: str) -> bool:
    return any(i.is_completed for i in tl.states_of(timestamp).values())


def _pending_at(tl: Timeline, timestamp: str) -> bool:
    states = tl.states_of(timestamp)
    return bool(states) and not any(i.is_completed for i in states.values())


def _timestamp(instant: Instant | None) -> str | None:
    return instant.timestamp if instant is not None else None


def _listed_after(tl: Timeline, actions: Iterable[str], base: str, completed_only: bool) -> list[str]:
    """The instants of `actions` after `base` (completed ones only if asked), as `_capped` lists them:
    the newest ones are walked back from the end, and the oldest is looked up only when there are more."""
    def matching(reverse: bool) -> Iterator[str]:
        return (i.timestamp for i in tl.iter_instants(actions, after=base or None, reverse=reverse)
                if i.is_completed or not completed_only)
    newest = list(islice(matching(True), MAX_LISTED))
    if len(newest) == MAX_LISTED:
        newest[-1] = next(matching(False))  # the oldest (itself if there are exactly MAX_LISTED)
    return newest[::-1]
