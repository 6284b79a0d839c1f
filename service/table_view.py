"""What the table on storage says: the facts stored at registration, and the live view served by
GET /api/v1/tables/{id} (timeline summary, pending instants, file-group statistics, what TMS can run on the
table, health)."""
from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import TablePolicy, TtlTaskRepo
from tms.fleet.file_group_sample import FileGroupSample, file_group_sample
from tms.fleet.health import health_digest
from tms.fleet.registration import registration_facts as registration_facts
from tms.fleet.registration import registration_refusal as fleet_refusal
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import instant_to_datetime
from tms.hudi.timeline.serde import MetadataFormatError
from tms.plan_pass.on_request import planner_options
from tms.planning.capabilities import COMPACTION, READING, Capability, capabilities
from tms.planning.decisions import not_scheduled_reason
from tms.planning.failed_writes import find_failed_writes
from tms.planning.health import table_health
from tms.planning.outlook import stored_outlook
from tms.planning.ttl import ttl_state
from tms.planning.ttl_schedule import next_ttl_due

from .schemas.tables import (
    CapabilityOut,
    FileGroupOut,
    FileGroupSummary,
    Health,
    InstantOut,
    TimelineSummary,
    TtlScheduleOut,
    TtlStateOut,
)

LARGEST_SHOWN = 20
SCHEDULED = ("compaction", "clustering", "clean", "rollback", "archive")  # what TMS_PLANNER_SERVICES may name


def capability_report(table: HudiTable, hudi_engine: str | None = None, *, policy: TablePolicy,
                      planner_services: frozenset[str]) -> dict[str, CapabilityOut]:
    """Reading and each table service: whether TMS runs it on the table (or the Hudi engine running the table's
    tasks does), and why not; for the services the planner schedules, whether it schedules them on its own for
    the table under `policy` and TMS_PLANNER_SERVICES (`planner_services`), and why not."""
    report = {}
    for service, c in capabilities(table, hudi_engine).items():
        out = CapabilityOut(can_run=c.can_run, reason=c.reason, engine=c.engine or None)
        if service in SCHEDULED and not (service == COMPACTION and not table.config.is_mor):
            why_not = not_scheduled_reason(service, planner_services, policy)
            out.scheduled, out.not_scheduled_reason = not why_not, why_not
        report[service] = out
    return report


def registration_refusal(report: dict[str, CapabilityOut]) -> str | None:
    """Why a table TMS can do nothing for is refused at registration (tms.fleet.registration)."""
    return fleet_refusal({service: Capability(c.can_run, c.reason) for service, c in report.items()})


def _refused_services(table: HudiTable, report: dict[str, CapabilityOut]) -> list[str]:
    """Health lines for the services TMS cannot run (compaction of a COPY_ON_WRITE table does not apply)."""
    return [f"TMS cannot run {service}: {c.reason}" if service != READING else f"TMS cannot read it: {c.reason}"
            for service, c in report.items()
            if not c.can_run and not (service == COMPACTION and not table.config.is_mor)]


def _instant_out(instant, zone: tzinfo) -> InstantOut:
    try:
        at: datetime | None = instant_to_datetime(instant.timestamp, zone)
    except (HudiError, ValueError):
        at = None
    return InstantOut(instant=instant.timestamp, action=instant.action, state=instant.state.name.lower(),
                      completion_time=instant.completion_time, time=at)


def _timeline_summary(timeline, zone: tzinfo) -> TimelineSummary:
    instants = timeline.instants()
    by_action: dict[str, Counter] = defaultdict(Counter)
    for instant in instants:
        by_action[instant.action][instant.state.name.lower()] += 1
    completed = sum(1 for i in instants if i.is_completed)
    last = timeline.last_completed()
    return TimelineSummary(
        instants=len(instants), completed=completed, pending=len(instants) - completed,
        by_action={action: dict(states) for action, states in sorted(by_action.items())},
        first_instant=instants[0].timestamp if instants else None,
        last_completed=_instant_out(last, zone) if last else None)


def _file_group_summary(sample: FileGroupSample) -> FileGroupSummary:
    """Totals over every partition, or (a table of more partitions than the view reads) estimated from an evenly
    spaced sample of them; the largest file groups of those read."""
    stats = sample.groups
    size = lambda g: (g.base_size or 0) + (g.log_bytes or 0)  # noqa: E731
    largest = heapq.nlargest(LARGEST_SHOWN, stats, key=size)
    return FileGroupSummary(
        file_groups=sample.estimate(len(stats)), partitions=sample.estimate(len(sample.listing.partitions)),
        base_bytes=sample.estimate(sum(g.base_size or 0 for g in stats)),
        log_files=sample.estimate(sum(g.log_count or 0 for g in stats)),
        log_bytes=sample.estimate(sum(g.log_bytes or 0 for g in stats)),
        largest_file_group_bytes=size(largest[0]) if largest else 0,
        largest=[FileGroupOut(partition=g.partition, file_id=g.file_id, base_file=g.base_file,
                              base_size=g.base_size or 0, log_count=g.log_count or 0, log_bytes=g.log_bytes or 0,
                              num_records=g.num_records, base_instant=g.base_instant) for g in largest],
        sampled=sample.sampled, partitions_read=len(sample.listing.partitions))


def ttl_schedule(session: Session, table_id: int, policy: TablePolicy) -> list[TtlScheduleOut]:
    """Each TTL service the policy sets: its newest task and when the next is due (tms.planning.ttl_schedule)."""
    repo = TtlTaskRepo(session)
    last = {t.service: t for t in reversed(repo.recent(table_id))}  # the newest of each service
    out = []
    for service, due in next_ttl_due(policy, repo.last_requested(table_id)).items():
        task = last.get(service)
        out.append(TtlScheduleOut(
            service=service.value, interval_hours=policy.ttl_interval_hours, next_due=due,
            last_task_id=task.id if task else None, last_state=task.state if task else None,
            last_requested_at=task.created_at if task else None, last_finished_at=task.finished_at if task else None))
    return out


def planner_outlook(planner_state: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    """The planner's outlook on each service of the table, as its last pass stored it with the table's digest
    (tms.planning.outlook); every service unread while the planner has not read the table."""
    stored = (planner_state or {}).get("services")
    if stored:
        return stored
    return stored_outlook(None, TablePolicy(), planner_options(settings), datetime.now(UTC), is_mor=False)


def live_view(base_path: str, policy: TablePolicy, tasks_by_state: dict[str, int], enabled: bool,
              ttl_tasks: list[TtlScheduleOut] | None = None, *, clean_commits: int = 5,
              orphan_safety_seconds: float = 24 * 3600, hudi_engine: str | None = None,
              planner_state: dict[str, Any] | None = None, table: HudiTable | None = None,
              planner_services: frozenset[str] = frozenset(), damaged_files: Sequence[str] = (),
              context: HudiContext = DEFAULT_CONTEXT) -> dict[str, Any]:
    """The table's current state on storage; problems become health reasons, never errors. `ttl_tasks`: the
    table's TTL schedule (ttl_schedule), shown in its TTL state. `clean_commits` and `orphan_safety_seconds`:
    the settings its health score reads (TMS_PLANNER_CLEAN_COMMITS, TMS_ORPHAN_SAFETY_HOURS). `hudi_engine`:
    the Hudi engine running the table's tasks (RolloutRepo.hudi_engine_for), if one does. `planner_state`: the
    table row's, to tell a due service the planner has not planned (health's `unplanned`). `table`: the table
    already loaded (a page that shows more of it reads one timeline), else loaded now. `planner_services`:
    TMS_PLANNER_SERVICES, which the capabilities' `scheduled` read. `damaged_files`: those its `table_damaged`
    alert names (reported_damaged_files), which take its score down."""
    reasons: list[str] = []
    status = "ok"
    view: dict[str, Any] = {"timeline": None, "pending_instants": [], "inflight_writes": [],
                            "file_group_stats": None, "capabilities": None, "ttl": None}
    try:
        table = table or HudiTable.load(base_path, context=context)
        view["capabilities"] = capability_report(table, hudi_engine, policy=policy, planner_services=planner_services)
        timeline = table.timeline
        zone = table.config.timeline_zone
        view["timeline"] = _timeline_summary(timeline, zone)
        view["pending_instants"] = [_instant_out(i, zone) for i in timeline.pending()]
        inflight = timeline.inflight_writes()
        view["inflight_writes"] = [_instant_out(i, zone) for i in inflight]
    except Exception as exc:  # any storage backend error: the table is unreadable right now
        return {**view, "health": Health(status="error", reasons=[f"cannot read the table: {exc}"])}

    sample: FileGroupSample | None = None
    try:
        sample = file_group_sample(table)
        view["file_group_stats"] = _file_group_summary(sample)
    except (ImportError, AttributeError):
        reasons.append("file-group statistics are not available in this version of TMS")
    except HudiError as exc:
        status = "warning"
        reasons.append(f"cannot list file groups: {exc}")

    refused = _refused_services(table, view["capabilities"])
    if refused:
        status = "warning"
        reasons += refused

    # Writers presumed failed by the planner's rule (Hudi's heartbeat expiry): their instants need a rollback.
    try:
        failed_writes = find_failed_writes(table, policy, datetime.now(UTC)) if inflight else []
    except (HudiError, MetadataFormatError, OSError) as exc:
        failed_writes = []
        status = "warning"
        reasons.append(f"cannot check the pending writes: {exc}")
    if failed_writes:
        status = "warning"
        reasons.append(f"{len(failed_writes)} write(s) presumed failed, awaiting a rollback: "
                       + "; ".join(f"{f.instant.timestamp} ({f.reason})" for f in failed_writes[:5]))
    try:
        state = ttl_state(table, policy, datetime.now(UTC))
        view["ttl"] = TtlStateOut(**vars(state), schedule=ttl_tasks or []) if state else None
    except (HudiError, MetadataFormatError, OSError) as exc:
        status = "warning"
        reasons.append(f"cannot tell what TTL has to do: {exc}")
    score = None
    try:  # the score and its reasons (tms.planning.health), failed and held plans among them
        digest = health_digest(table, datetime.now(UTC), tasks_by_state=tasks_by_state, clean_commits=clean_commits,
                               orphan_safety_seconds=orphan_safety_seconds, planner_state=planner_state,
                               damaged_files=damaged_files, sample=sample)
        health = table_health(digest, policy, datetime.now(UTC))
        score = health.score
        reasons += [r.message for r in health.reasons]
        if health.status != "ok":
            status = "warning"
    except (HudiError, MetadataFormatError, OSError) as exc:
        status = "warning"
        score = 0  # as the fleet round scores a table it cannot read
        reasons.append(f"cannot score the table's health: {exc}")
    if not enabled:
        reasons.append("table is disabled: TMS plans nothing for it")
    return {**view, "health": Health(status=status, reasons=reasons, score=score)}
