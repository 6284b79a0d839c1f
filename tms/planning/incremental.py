"""Incremental scheduling of compaction and clustering, as Hudi 1.1 does it (RFC-83,
`hoodie.table.services.incremental.enabled`): a plan looks only at the partitions written since the last
completed plan of its service, plus the partitions that plan left out (`missingSchedulePartitions`), and
builds its file-system view of those partitions alone. Every `full_pass_every` a plan looks at the whole
table again, and catches what the increments missed.

A policy change can make file groups of partitions nobody wrote to eligible (clustering's small-file limit raised,
single-slice groups allowed): each plan records a digest of the policy options that choose its file groups
(`policy_digest`), and the next plan of its service is a full pass when the table's digest differs.

The partitions written since: those the commit metadata names of every write completed at or after the last
plan's instant time (BaseTableServicePlanActionExecutor.getIncrementalPartitions) — by completion time, so a
write that started before that plan and completed after it (the compensation case) is counted. Compaction
leaves out the compaction commits (they write no log files), clustering counts them (they change base sizes).

The partitions a plan leaves out: as Hudi, those whose file groups the strategy filtered out (an IO bound, the
newest partitions only, the number of groups); beyond Hudi, those holding a file group busy in a pending
plan or write, which becomes eligible when that ends without a write of its own (a rollback) or whose log
files completed before the plan. With both, the file groups an incremental plan may choose are those a full
pass would, and it chooses them the same way.

The last plan and the writes since may have been archived: a busy table's archiver takes a compaction once
hoodie.compact.inline.max.delta.commits delta commits follow it (Hudi's getEarliestInstantToRetainForCompaction),
and Hudi then schedules by a full pass. TMS reads them from the archived timeline instead: each plan records the
earliest instant time a write completing after it can have (`WRITES_FROM_KEY`: the oldest instant pending when it
was made, or then, less a margin), so the archived files to read are the few newest, and the last plan is looked
for no further back than the full-pass period (an older one makes a full pass anyway) and in the newest
ARCHIVED_FILES_SEARCHED files.

Only v8+ tables: v6 has no completion times to tell a write that completed after a plan from one before it.
A plan not made by TMS (a writer's, an adopted one) starts a full pass: TMS does not know what it left out."""
from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from weakref import WeakKeyDictionary

from tms.hudi.errors import HudiError, InstantVanishedError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, Instant, State, instant_to_datetime, new_instant_time
from tms.hudi.timeline.serde import (
    MetadataFormatError,
    PlanExtraMetadata,
    read_commit_partitions,
    read_plan_extra_metadata,
)
from tms.hudi.timeline.timeline import WRITE_ACTIONS, Timeline
from tms.table_service import TableService

from .policy import TablePolicy

# In a plan's extraMetadata: how it chose its partitions, (incremental) the instant time of the full pass it
# follows (a full pass is its own plan's instant time), the digest of the policy options it chose by, and the
# earliest instant time of a write that may complete after it.
SCOPE_KEY = "tms.schedule.scope"
FULL_PASS_KEY = "tms.schedule.full.pass"
POLICY_KEY = "tms.schedule.policy"
WRITES_FROM_KEY = "tms.schedule.writes.from"
# A write's requested file appears a moment after it takes its instant time, and writers' clocks differ from
# TMS's (Hudi expects at most hoodie.time.generator.max_expected_clock_skew_ms, 200 ms by default): the bound a
# plan records is this much before it was made. Each later plan reads the archived files reaching the bound, so
# it is kept short: on a busy table those are the archiver's newest one or two.
WRITES_SKEW = timedelta(seconds=10)
# The archived timeline's files searched for the last plan, newest first: a service that plans often has its last
# plan in the newest (the archiver's last few); one not found there makes a full pass, as Hudi's would.
ARCHIVED_FILES_SEARCHED = 4
FULL = "full"
INCREMENTAL = "incremental"

# The policy options that decide which file groups a plan of the service chooses (its trigger's and its output's
# sizes do not): compaction's strategy, its bounds and thresholds, and the size it gives a slice without a base
# file; clustering's small-file limit, its groups' packing and number, and what makes a one-slice group worth it.
DECIDING_OPTIONS: dict[str, tuple[str, ...]] = {
    TableService.COMPACTION: (
        "hoodie.compaction.strategy", "hoodie.compaction.target.io", "hoodie.compaction.daybased.target.partitions",
        "hoodie.compaction.logfile.size.threshold", "hoodie.compaction.logfile.num.threshold",
        "hoodie.parquet.max.file.size"),
    TableService.CLUSTERING: (
        "hoodie.clustering.plan.strategy.small.file.limit", "hoodie.clustering.plan.strategy.max.bytes.per.group",
        "hoodie.clustering.plan.strategy.max.num.groups", "hoodie.clustering.plan.strategy.sort.columns",
        "hoodie.clustering.plan.strategy.single.group.clustering.enabled", "hoodie.parquet.max.file.size"),
}


def policy_digest(policy: TablePolicy, service: TableService) -> str:
    """A short digest of the effective values of the options that choose the file groups of `service`'s plans."""
    options = policy.options()
    chosen_by = {name: options[name] for name in DECIDING_OPTIONS[service]}
    return hashlib.sha256(json.dumps(chosen_by, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Scope:
    """The partitions a plan looks at: `partitions`, or the whole table when None (a full pass)."""
    partitions: frozenset[str] | None
    full_pass: str | None  # instant time of the full pass this plan follows (None: it is one)
    why: str               # one line, for logs, tests and the planner's outlook
    policy: str            # policy_digest of the policy the plan chooses by
    # the earliest instant time of a write that may complete after the plan: a fact of the moment it is made
    writes_from: str | None = field(default=None, compare=False)

    @property
    def is_full(self) -> bool:
        return self.partitions is None

    def metadata(self) -> dict[str, str]:
        """What a plan records of its scope, read by the next plan of its service."""
        recorded = {SCOPE_KEY: FULL, POLICY_KEY: self.policy}
        if self.full_pass is not None:
            recorded |= {SCOPE_KEY: INCREMENTAL, FULL_PASS_KEY: self.full_pass}
        if self.writes_from is not None:
            recorded[WRITES_FROM_KEY] = self.writes_from
        return recorded

    def describe(self) -> str:
        """How the plan chose its partitions, in words (kept with the planner's outlook)."""
        return f"a full pass ({self.why})" if self.is_full else f"incremental ({self.why})"


def full_pass_period(hours: float) -> timedelta | None:
    """TMS_PLANNER_FULL_PASS_HOURS as the period `plan_scope` takes (0: every plan is a full pass, None)."""
    return timedelta(hours=hours) if hours > 0 else None


def full_scope(why: str, policy: str, writes_from: str | None = None) -> Scope:
    return Scope(None, None, why, policy, writes_from)


def _norm(partition: str | None) -> str:
    return posixpath.normpath(partition) if partition else ""


@dataclass(frozen=True)
class _LastPlan:
    timestamp: str
    extra_metadata: dict[str, str]
    missing: list[str] | None
    archived: bool = False

    @property
    def writes_from(self) -> str | None:
        return self.extra_metadata.get(WRITES_FROM_KEY)


# What the plans of a loaded timeline record of their scope, kept when TMS wrote the plan through that timeline,
# else read once from the plan's file without its operations (a plan of a big table names thousands this does
# not need: building them is what made the next incremental plan's time follow the last plan's size).
_RECORDED: WeakKeyDictionary[Timeline, dict[str, PlanExtraMetadata | None]] = WeakKeyDictionary()
_KEPT = 8


def remember_plan(timeline: Timeline, timestamp: str, extra_metadata: dict[str, str],
                  missing: list[str] | None) -> None:
    """What the plan TMS just wrote at `timestamp` records of its scope, kept with the loaded timeline for the
    next plan of its service (the planner keeps timelines loaded between passes)."""
    _keep(_RECORDED.setdefault(timeline, {}), timestamp, PlanExtraMetadata(dict(extra_metadata), missing))


def _keep(known: dict[str, PlanExtraMetadata | None], timestamp: str, record: PlanExtraMetadata | None) -> None:
    """Keep `record`, and the newest few others only: a plan needs the latest compaction's or clustering's (one
    dropped is read again), and a table's life has a plan a minute."""
    known[timestamp] = record
    for old in sorted(known)[:-_KEPT]:
        del known[old]


def _recorded_scope(table: HudiTable, inst: Instant) -> _LastPlan | None:
    """What the plan of a completed compaction or clustering records of its scope (None: not a clustering)."""
    tl = table.timeline
    known = _RECORDED.setdefault(tl, {})
    if inst.timestamp not in known:
        try:
            kept = read_plan_extra_metadata(tl.read_plan(inst.timestamp))
        except MetadataFormatError:
            kept = None  # an insert_overwrite's requested file may be empty
        _keep(known, inst.timestamp, kept)
    else:
        kept = known[inst.timestamp]
    return None if kept is None else _LastPlan(inst.timestamp, kept.extra_metadata, kept.missing_schedule_partitions)


def _last_compaction(table: HudiTable, not_before: str) -> _LastPlan | None:
    """The latest completed compaction (by instant time, as Hudi's lastInstant) and what its plan records; from
    the archived timeline when the active one has none (not before `not_before`)."""
    for inst in table.timeline.iter_instants((Action.COMMIT,), reverse=True):
        if inst.is_completed and _is_compaction(table, inst):
            return _recorded_scope(table, inst)
    return _archived_plan(table, Action.COMMIT, not_before)


def _is_compaction(table: HudiTable, inst: Instant) -> bool:
    """A commit of a MERGE_ON_READ table that completed a compaction plan (its requested file names it)."""
    req = table.timeline.states_of(inst.timestamp).get(State.REQUESTED)
    return req is not None and req.action == Action.COMPACTION


def _last_clustering(table: HudiTable, not_before: str) -> _LastPlan | None:
    tl = table.timeline
    for inst in tl.iter_instants((Action.REPLACE_COMMIT,), reverse=True):
        if inst.is_completed and State.REQUESTED in tl.states_of(inst.timestamp):
            if (last := _recorded_scope(table, inst)) is not None:
                return last
    return _archived_plan(table, Action.REPLACE_COMMIT, not_before)


def _archived_plan(table: HudiTable, action: str, not_before: str) -> _LastPlan | None:
    """The newest archived completed compaction (`action` commit, of a MERGE_ON_READ table) or clustering
    (replacecommit with a clustering plan, an insert_overwrite's passed over) at or after `not_before`, and what
    its plan records."""
    for row in table.timeline.archived_rows(not_before, (action,), "plan", max_files=ARCHIVED_FILES_SEARCHED):
        if row.instant_time < not_before:
            return None
        if not row.content and action == Action.REPLACE_COMMIT:
            continue  # an insert_overwrite without a plan
        try:
            kept = read_plan_extra_metadata(row.content or b"")
        except MetadataFormatError:  # a plan TMS cannot read (a replace's inflight metadata): a full pass
            return _LastPlan(row.instant_time, {}, None, archived=True)
        if kept is not None:
            return _LastPlan(row.instant_time, kept.extra_metadata, kept.missing_schedule_partitions, archived=True)
    return None


# The pending instants that complete as writes: writes, and table services that rewrite files.
_COMPLETING_AS_WRITES = (*WRITE_ACTIONS, Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING)


def writes_from(table: HudiTable) -> str:
    """The earliest instant time of a write that may complete after a plan made now: the oldest instant pending on
    the loaded timeline, or now, less WRITES_SKEW."""
    pending = [i.timestamp for i in table.timeline.iter_instants(_COMPLETING_AS_WRITES) if not i.is_completed]
    zone = table.config.timeline_zone
    oldest = min([new_instant_time(zone, datetime.now(UTC)), *pending])
    return new_instant_time(zone, instant_to_datetime(oldest, zone) - WRITES_SKEW)


def plan_scope(table: HudiTable, service: TableService, now: datetime, full_pass_every: timedelta | None,
               policy: TablePolicy) -> Scope:
    """The partitions the next `service` plan of `table` under `policy` looks at (`full_pass_every` None: always
    all)."""
    digest = policy_digest(policy, service)
    bound = writes_from(table) if table.config.traits.completion_times else None

    def full(why: str) -> Scope:
        return full_scope(why, digest, bound)

    if full_pass_every is None:
        return full("incremental scheduling is off")
    if not table.config.traits.completion_times:
        return full(f"a v{table.config.version} table has no completion times to schedule by")
    not_before = new_instant_time(table.config.timeline_zone, now - full_pass_every)
    try:
        last = (_last_compaction(table, not_before) if service == TableService.COMPACTION
                else _last_clustering(table, not_before))
    except (HudiError, MetadataFormatError) as e:
        return full(f"the last {service} plan cannot be read: {e}")
    if last is None:
        return full(f"no completed {service} on the active timeline, nor archived since {not_before}")
    scope = last.extra_metadata.get(SCOPE_KEY)
    full_pass = last.timestamp if scope == FULL else last.extra_metadata.get(FULL_PASS_KEY)
    if last.missing is None or full_pass is None:
        return full(f"the last {service} {last.timestamp} was not planned by TMS")
    if now - instant_to_datetime(full_pass, table.config.timeline_zone) >= full_pass_every:
        return full(f"the last full pass {full_pass} is older than {full_pass_every}")
    recorded = last.extra_metadata.get(POLICY_KEY)
    if recorded != digest:
        options = ", ".join(DECIDING_OPTIONS[service])
        if recorded is None:
            return full(f"the last {service} {last.timestamp} records no policy digest, so a change of {options} "
                        f"since cannot be ruled out")
        return full(f"the {service} policy changed since the last {service} {last.timestamp} (one of {options})")
    if last.archived and last.writes_from is None:
        return full(f"the last {service} {last.timestamp} was archived, and records no bound of the writes that "
                    f"completed after it")
    try:
        written = written_since(table, last, with_compactions=service != TableService.COMPACTION)
    except (HudiError, MetadataFormatError) as e:
        return full(f"the writes since the last {service} {last.timestamp} cannot be read: {e}")
    partitions = frozenset(written | {_norm(p) for p in last.missing})
    where = " (archived)" if last.archived else ""
    return Scope(partitions, full_pass, f"{len(partitions)} partitions written since or left out by "
                                        f"{service} {last.timestamp}{where}", digest, bound)


def written_since(table: HudiTable, last: _LastPlan, *, with_compactions: bool) -> set[str]:
    """Partitions the commit metadata names of the writes completed at or after `last`'s instant time, compactions
    only `with_compactions` (a clustering's own output may be clustered again, as a full pass would). Writes the
    archiver took since are read from the archived timeline, from the bound `last` records (if it does)."""
    tl = table.timeline
    out: set[str] = set()
    vanished = False
    for inst in tl.completed(WRITE_ACTIONS):
        if (inst.completion_time or inst.timestamp) < last.timestamp:
            continue
        if not with_compactions and inst.action == Action.COMMIT and _is_compaction(table, inst):
            continue
        try:
            named = tl.commit_partitions(inst)
        except InstantVanishedError:
            vanished = True  # archived since the timeline was listed (or rolled back: then it names nothing)
            continue
        out.update(_norm(p) for p in named)
    start, bound = tl.start(), last.writes_from
    if bound is not None and (vanished or start is None or start > bound):
        out |= _archived_written_since(table, last.timestamp, bound, with_compactions=with_compactions)
    return out


def _archived_written_since(table: HudiTable, since: str, bound: str, *, with_compactions: bool) -> set[str]:
    """The partitions of the archived writes at or after instant time `bound` that completed at or after
    `since`. A MERGE_ON_READ table's commits are its compactions."""
    out: set[str] = set()
    for row in table.timeline.archived_rows(bound, WRITE_ACTIONS, "metadata"):
        if row.instant_time < bound:
            break  # newest first: the rest are older still
        if (row.completion_time or row.instant_time) < since:
            continue
        if not with_compactions and row.action == Action.COMMIT and table.config.is_mor:
            continue
        out.update(_norm(p) for p in read_commit_partitions(row.content or b""))
    return out


def left_out(unchosen: Iterable[str], busy: Iterable[tuple[str, str]]) -> list[str]:
    """The partitions a plan records as missing: those of the candidates it did not choose (`unchosen`), and
    those holding a busy file group (in a pending plan or write)."""
    return sorted({_norm(p) for p in unchosen} | {_norm(p) for p, _ in busy})
