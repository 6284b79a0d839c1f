"""Each planned service's part of a planning pass (its entry in tms.table_services): the library's plan, or a
one-line finding when it was due (or forced) and there was nothing to plan (or a plan still waiting for a
worker holds the next one back), or False when its trigger was not due after all (the digest was stale: the
rebuilt one is right); and whether its trigger is due, reading only."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tms.hudi.errors import HudiError
from tms.planning.archive import plan_archive
from tms.planning.clean import plan_clean_or_why
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction
from tms.planning.planned import Planned
from tms.planning.triggers import clustering_trigger, compaction_trigger

from .context import PassContext

PlanOrWhy = Planned | str | bool


@dataclass(frozen=True)
class ServicePlanner:
    plan: Callable[[PassContext, bool], PlanOrWhy]  # (the pass, forced: an operator asked for it)
    due: Callable[[PassContext], bool]
    # It decides on instants a listing of the timeline's tail may miss (the savepoints' commits): the pass reads
    # the whole timeline (tms.plan_pass.passes._decides_on_older_instants).
    reads_older_instants: bool = False


def _plan_compaction(ctx: PassContext, force: bool) -> PlanOrWhy:
    planned = plan_compaction(ctx.table, ctx.policy, ctx.now, force=force, full_pass_every=ctx.full_pass_every)
    if planned:
        return planned
    decision = compaction_trigger(ctx.table, ctx.policy, ctx.now)
    if decision.waiting_for:
        return f"due, but compaction {', '.join(decision.waiting_for)} has not started yet"
    return "nothing to compact: every file group with log files is in a pending plan" \
        if decision.due or force else False


def _plan_clustering(ctx: PassContext, force: bool) -> PlanOrWhy:
    planned = plan_clustering(ctx.table, ctx.policy, ctx.now, force=force, full_pass_every=ctx.full_pass_every)
    if planned:
        return planned
    return "nothing to cluster: no file groups the clustering strategy picks outside pending plans" \
        if force or clustering_trigger(ctx.table, ctx.policy).due else False


def _plan_clean(ctx: PassContext, force: bool) -> PlanOrWhy:
    return plan_clean_or_why(ctx.table, ctx.policy, ctx.now)


def _plan_archive(ctx: PassContext, force: bool) -> PlanOrWhy:
    # Imported here: a job imports the registry, and so this module, and never opens the database (importing
    # the database layer took 3 of a job's 3.4 s of start-up CPU).
    from tms.db import ArchiveTaskRepo
    active = ArchiveTaskRepo(ctx.session).active(ctx.row.id)
    if active is not None:  # one archive task per table at a time: it archives what is due when it runs
        return f"due, but archive task {active.id} ({active.state}) has not finished yet"
    try:
        planned = plan_archive(ctx.table, ctx.policy, ctx.now)
    except HudiError as e:  # e.g. a table version the library does not archive yet: said on the table's page
        return f"due, but it cannot be archived: {e}"
    return planned or (
        "nothing to archive: the active timeline is within hoodie.keep.max.commits, or Hudi's archival rules "
        "hold its oldest instants back (a pending instant, a savepoint, a pending compaction or clustering, "
        "the cleaner's retained commits, the metadata table's compaction)")


def _always_due(ctx: PassContext) -> bool:
    """Attempted whenever the digest says so (the library decides)."""
    return True


COMPACTION = ServicePlanner(_plan_compaction, lambda ctx: compaction_trigger(ctx.table, ctx.policy, ctx.now).due)
CLUSTERING = ServicePlanner(_plan_clustering, lambda ctx: clustering_trigger(ctx.table, ctx.policy).due)
CLEAN = ServicePlanner(_plan_clean, _always_due, reads_older_instants=True)
ARCHIVE = ServicePlanner(_plan_archive, _always_due, reads_older_instants=True)
