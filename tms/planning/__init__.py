"""The planning library: decides what compaction, clustering, clean or rollback a table needs and writes the
plan onto its timeline. Every function takes a loaded HudiTable (and a TablePolicy and `now`, a timezone-aware
datetime, where a decision depends on them) and returns what it planned; none needs the database (this package
never imports `tms.db`), and none plans a file group, a clean or a rollback twice. `digest` and `decisions`
decide when to plan from what the planner remembers of a table. The planner role (`planner/`) runs them for
every registered table."""
from tms.table_service import SERVICES

from .adoption import find_unknown_plans
from .clean import earliest_instant_to_retain, plan_clean
from .clustering import plan_clustering
from .compaction import plan_compaction
from .compensation import held_compactions, sync_held_plan, sync_held_plans
from .errors import CompensationError, PlanningError
from .failed_writes import FailedWrite, find_failed_writes
from .planned import Planned
from .rollback import plan_failed_write_rollbacks, plan_rollback
from .schedule import ScheduleResult, schedule
from .stats import PlanStats, plan_stats
from .triggers import TriggerDecision, clustering_trigger, compaction_trigger

__all__ = [
    "SERVICES", "CompensationError", "FailedWrite", "PlanStats", "Planned", "PlanningError", "ScheduleResult",
    "TriggerDecision", "clustering_trigger", "compaction_trigger", "earliest_instant_to_retain",
    "find_failed_writes", "find_unknown_plans", "held_compactions", "plan_clean", "plan_clustering",
    "plan_compaction", "plan_failed_write_rollbacks", "plan_rollback", "plan_stats", "schedule",
    "sync_held_plan", "sync_held_plans",
]
