"""One planning pass over one table, run under the table's planning lock: reload the timeline (only new
instant files are parsed), settle the requested plans TMS can no longer run (refusals), adopt plans that
have no task, plan the rollback of failed writes (if asked), sync held plans, plan what the caller found
possibly due — each service only if TMS can run it on the table; the library decides exactly, on the
reloaded timeline, and builds a file-system view only then — record a task per plan, and rebuild the
table's digest from the timeline."""
from __future__ import annotations

from functools import partial

from tms.db import AlertRepo, TaskRecord
from tms.hudi.errors import HudiError
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import MetadataFormatError
from tms.hudi.timeline.timeline import WRITE_ACTIONS
from tms.planning.capabilities import require_capability
from tms.planning.decisions import Work
from tms.planning.digest import TimelineDigest
from tms.planning.errors import PlanningError
from tms.planning.failed_writes import find_failed_writes
from tms.planning.planned import Planned
from tms.planning.rollback import plan_failed_write_rollbacks
from tms.planning.savepoints import apply_savepoint_policy
from tms.table_service import TableService
from tms.table_services import PASS_PLANNED, entry_of

from .context import PassContext
from .damage import check_damaged_files
from .planners import PlanOrWhy, ServicePlanner
from .records import TaskRecorder
from .refusals import Refusals, hudi_engine_of

# What a table's data or plans can make fail; anything else (the database) aborts the pass.
PLANNING_ERRORS = (HudiError, PlanningError, MetadataFormatError, OSError)


# What a trigger that counts completed writes awaits when an attempt plans nothing: their completion counts.
_PLAN_ACTIONS = (Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING)
_AWAITED_ACTIONS = (*WRITE_ACTIONS, *_PLAN_ACTIONS)


def _plan(ctx: PassContext, service: str, *, force: bool = False) -> PlanOrWhy:
    """The library's plan for `service` (its planner in the registry, tms.plan_pass.planners)."""
    return _planner(service).plan(ctx, force)


def _planner(service: str) -> ServicePlanner:
    planner = entry_of(service).planner
    if planner is None:
        raise PlanningError(f"{service} is not planned by a planning pass")
    return planner


def planning_pass(ctx: PassContext, digest: TimelineDigest, work: Work) -> tuple[TimelineDigest, list[TaskRecord]]:
    """Run `work` on the locked table, under its writers' lock; returns its new digest and the tasks recorded.
    The timeline is listed once for the whole pass (its library calls would each list it again)."""
    with ctx.transaction(exact_view=_decides_on_older_instants(ctx, work)), \
            ctx.table.timeline.pinned(listed=True):  # reloaded under the lock
        return _run_pass(ctx, digest, work)


def _decides_on_older_instants(ctx: PassContext, work: Work) -> bool:
    """Whether the pass decides on what a listing of the timeline's tail may miss (tail_listing): a clean
    keeps what savepoints keep, a rollback plan and the savepoint policy read the savepoints, all named by
    the commit they keep; the timeline is then read from its change feed, or listed from the oldest commit
    a savepoint made since can keep (Timeline.reload's `exact`)."""
    return (any(_planner(s).reads_older_instants for s in work.services if s in PASS_PLANNED) or work.rollbacks
            or bool(ctx.policy.savepoint_interval_hours))


def _run_pass(ctx: PassContext, digest: TimelineDigest, work: Work) -> tuple[TimelineDigest, list[TaskRecord]]:
    recorder = TaskRecorder(ctx.session, ctx.row, ctx.table, ctx.policy)
    refusals = Refusals(ctx.session, ctx.row, ctx.table)
    unrunnable = _guarded(recorder, "unrunnable plans", refusals.settle_unrunnable_plans) or set()
    _guarded(recorder, "adoption", partial(recorder.adopt_unknown_plans, unrunnable))
    _guarded(recorder, "damaged files", partial(check_damaged_files, ctx.session, ctx.row.id, ctx.row.base_path,
                                                ctx.table))
    # Rollbacks first: a held plan synced after them, or a compaction planned after them, is not held by
    # the writes they remove.
    if work.rollbacks:
        if refusals.can_run(TableService.ROLLBACK):
            _guarded(recorder, TableService.ROLLBACK, lambda: [
                recorder.record(p) for p in plan_failed_write_rollbacks(ctx.table, ctx.policy, ctx.now,
                                                                        lazy=ctx.lazy_failed_writes)])
        elif _guarded(recorder, TableService.ROLLBACK, partial(find_failed_writes, ctx.table, ctx.policy, ctx.now,
                                                               lazy=ctx.lazy_failed_writes)):
            refusals.refuse(TableService.ROLLBACK)
    _guarded(recorder, "compensation", recorder.sync_held_plans)
    if ctx.policy.savepoint_interval_hours:
        _guarded(recorder, "savepoint", partial(apply_savepoint_policy, ctx.table, ctx.policy, ctx.now))
    for service in PASS_PLANNED:
        if service not in work.services:
            continue
        if not refusals.can_run(service):
            # Nothing is written for a service TMS cannot run: if it is due, its alert says why. Its trigger
            # stays armed, so it is planned on the first pass after the table's properties allow it again.
            if _guarded(recorder, service, partial(_planner(service).due, ctx)):
                refusals.refuse(service)
                digest.found(service, _newest_instant(ctx.table),
                             f"due, but TMS cannot run it on this table: {refusals.capabilities[service].reason}")
            continue
        planned = _guarded(recorder, service, partial(_plan, ctx, service))
        if isinstance(planned, Planned):
            recorder.record(planned)
            digest.planned(service)
            digest.scoped(planned)
            AlertRepo(ctx.session).resolve(recorder.planning_failed_fingerprint(service))
        elif planned is not False:  # due but nothing to plan (a finding), or it failed (None): re-arm the trigger
            digest.attempted(service, _newest_instant(ctx.table), _pending(ctx.table),
                             planned or "due, but planning failed (see the table's planning_failed alert)",
                             held_by=_oldest_pending_plan(ctx.table) if service == TableService.ARCHIVE else None)
    return TimelineDigest.of(ctx.table, digest, ctx.now, ctx.services), recorder.recorded


def requested_pass(ctx: PassContext, digest: TimelineDigest | None, service: TableService
                   ) -> tuple[TimelineDigest, list[TaskRecord]]:
    """An operator's request to plan `service` now (`POST /api/v1/tables/{id}:plan`): a planning pass that
    plans the service whatever its trigger says (a rollback: of the writes whose writer is gone), and raises
    what keeps it from planning instead of alerting. Returns the table's new digest and the tasks recorded
    (the requested plan's, and those of plans adopted on the way). A service TMS cannot run on the table
    raises UnsupportedTableError before anything is written."""
    require_capability(ctx.table, service, hudi_engine_of(ctx.session, ctx.row))
    # An operator's request is rare: never from the folder's tail, whatever the service.
    with ctx.transaction(exact_view=True), ctx.table.timeline.pinned(listed=True):  # reloaded under the lock
        recorder = TaskRecorder(ctx.session, ctx.row, ctx.table, ctx.policy)
        refusals = Refusals(ctx.session, ctx.row, ctx.table)
        unrunnable = _guarded(recorder, "unrunnable plans", refusals.settle_unrunnable_plans) or set()
        _guarded(recorder, "adoption", partial(recorder.adopt_unknown_plans, unrunnable))
        if service == TableService.ROLLBACK:
            planned = plan_failed_write_rollbacks(ctx.table, ctx.policy, ctx.now, lazy=ctx.lazy_failed_writes)
            _guarded(recorder, "compensation", recorder.sync_held_plans)
        else:
            _guarded(recorder, "compensation", recorder.sync_held_plans)
            found = _plan(ctx, service, force=True)
            planned = [found] if isinstance(found, Planned) else []
            if digest is not None and isinstance(found, str):
                digest.found(service, _newest_instant(ctx.table), found)
            elif digest is not None and isinstance(found, Planned):
                digest.scoped(found)
        for plan in planned:
            recorder.record(plan)
        if planned:
            AlertRepo(ctx.session).resolve(recorder.planning_failed_fingerprint(service))
        return TimelineDigest.of(ctx.table, digest, ctx.now, ctx.services), recorder.recorded


def _newest_instant(table) -> str:
    latest = table.timeline.latest()
    return latest.timestamp if latest else ""


def _pending(table) -> list[str]:
    """The writes and table services pending on the table: a trigger re-armed now counts them once they complete."""
    return [i.timestamp for i in table.timeline.pending(_AWAITED_ACTIONS)]


def _oldest_pending_plan(table) -> str | None:
    """The oldest compaction or clustering plan pending: Hudi's archival rules hold every instant after it."""
    oldest = table.timeline.pending(_PLAN_ACTIONS)
    return oldest[0].timestamp if oldest else None


def _guarded(recorder: TaskRecorder, step: str, run):
    """Run one step; a failure of the table's data raises an alert and the pass goes on."""
    try:
        return run()
    except PLANNING_ERRORS as e:
        recorder.alert_planning_failed(step, e)
        return None
