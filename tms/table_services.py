"""The table services' registry: one entry per TableService, with all TMS knows of the service beyond its
name: the model of its task's payload (tms.task_payload), its planner (a planning pass's part), the timeline
actions its plans are and the executor that runs them, the job a worker launches for it, and how that job is
sized. Adding a service is its own module(s) and an entry here; the planning pass, the dispatch of a plan to
its executor, the worker's job command and its sizing look the service up here rather than testing for it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tms.execute.action import ActionExecutor, ExecutionResult
from tms.execute.clean import CleanExecutor
from tms.execute.clustering import ClusteringExecutor
from tms.execute.compaction import CompactionExecutor
from tms.execute.fencing import Fence
from tms.execute.rollback import RollbackExecutor
from tms.execute.runner import Runner
from tms.execute.whole_instant import index_instant, restore_instant
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.plan_pass import planners
from tms.plan_pass.planners import ServicePlanner
from tms.table_service import TableService
from tms.task_payload import ArchiveRequest, BackupRequest, PayloadBody, PlanStatistics, TtlRequest

# An executor that runs a pending instant whole (a restore, an index build): (table, instant, runner, fence,
# the table's lock) -> its result.
InstantRunner = Callable[[HudiTable, str, Runner, Fence, TransactionManager | None], ExecutionResult]


@dataclass(frozen=True)
class ServiceEntry:
    service: TableService
    payload: type[PayloadBody]  # the body of its task's payload: the plan's statistics, or the request
    # Its part of a planning pass (None: asked for, not planned by a pass; a rollback's: the pass's first step).
    planner: ServicePlanner | None = None
    # The timeline actions of its pending plans, and what runs them in the plan's job (jobs/run.py): an
    # ActionExecutor (operations mapped on the runner) or an InstantRunner. None: its task names its request,
    # and its own job runs it (`job`).
    actions: tuple[str, ...] = ()
    executor: type[ActionExecutor] | InstantRunner | None = None
    # The module of the job a worker runs for a task that names its request (python -m MODULE), whatever the
    # worker's runner; `job_lock_options`: it is handed the table's lock options. None: the plan's job
    # (spark-submit of jobs/run.py, the plain Python job, a warm or a Hudi engine).
    job: str | None = None
    job_lock_options: bool = False
    # Its job may run on the queue's warm engine, in the engine's driver, when one is up (spark runner): a short
    # job that runs often (archival), whose process start-up would be most of its time. Its module's main(argv).
    job_on_warm_engine: bool = False
    # Sizing (worker.sizing): its operations merge file groups in the executors' Python workers; and whether
    # statistics recorded before `within_budget` existed count as merged within the memory budget.
    merges: bool = False
    within_budget_by_default: bool = False
    # Java Hudi's Spark procedures execute its plans too (a hudi engine's job, a rollout's shadow run on a
    # scratch copy). Not a clean: Hudi's run_clean schedules a clean of its own rather than run TMS's plan.
    java_executes: bool = False

    @property
    def action_executor(self) -> type[ActionExecutor] | None:
        """Its executor if it maps operations on a runner (and can be asked whether its plan stays inside the
        table, and whether an inflight attempt resumes)."""
        return self.executor if isinstance(self.executor, type) else None

    @property
    def instant_runner(self) -> InstantRunner | None:
        """Its executor if it runs the instant whole."""
        return None if self.executor is None or isinstance(self.executor, type) else self.executor


S = TableService
TABLE_SERVICES: dict[TableService, ServiceEntry] = {e.service: e for e in (
    ServiceEntry(S.COMPACTION, PlanStatistics, planners.COMPACTION, (Action.COMPACTION,), CompactionExecutor,
                 merges=True, within_budget_by_default=True, java_executes=True),
    # v6 names a pending clustering `replacecommit` (tms.execute.dispatch tells it from a replace commit's).
    ServiceEntry(S.CLUSTERING, PlanStatistics, planners.CLUSTERING, (Action.CLUSTERING,), ClusteringExecutor,
                 merges=True, java_executes=True),
    ServiceEntry(S.CLEAN, PlanStatistics, planners.CLEAN, (Action.CLEAN,), CleanExecutor),
    ServiceEntry(S.ROLLBACK, PlanStatistics, None, (Action.ROLLBACK,), RollbackExecutor),
    ServiceEntry(S.RESTORE, PlanStatistics, None, (Action.RESTORE,), restore_instant),
    ServiceEntry(S.BACKUP, BackupRequest, job="jobs.backup_job"),
    ServiceEntry(S.BACKUP_CLEAN, BackupRequest, job="jobs.backup_job"),
    ServiceEntry(S.BACKUP_RESTORE, BackupRequest, job="jobs.backup_job"),
    ServiceEntry(S.TTL, TtlRequest, job="jobs.ttl_job", job_lock_options=True),
    ServiceEntry(S.PARTITION_TTL, TtlRequest, job="jobs.ttl_job", job_lock_options=True),
    ServiceEntry(S.INDEXING, PlanStatistics, None, (Action.INDEXING,), index_instant),
    ServiceEntry(S.ARCHIVE, ArchiveRequest, planners.ARCHIVE, job="jobs.archive_job", job_lock_options=True,
                 job_on_warm_engine=True),
)}
# The services a planning pass plans when they are due, in the order it plans them.
PASS_PLANNED: tuple[TableService, ...] = tuple(s for s, e in TABLE_SERVICES.items() if e.planner is not None)
# The services whose plans Java Hudi executes too (a hudi engine, a shadow run).
JAVA_EXECUTED: tuple[TableService, ...] = tuple(s for s, e in TABLE_SERVICES.items() if e.java_executes)
# The jobs a warm engine runs in its driver (jobs/warm_engine.py refuses any other module).
WARM_ENGINE_JOBS: frozenset[str] = frozenset(e.job for e in TABLE_SERVICES.values() if e.job and e.job_on_warm_engine)
# The executor of each timeline action TMS runs plans of.
BY_ACTION: dict[str, ServiceEntry] = {a: e for e in TABLE_SERVICES.values() for a in e.actions}


def entry_of(service: str) -> ServiceEntry:
    """The registry's entry of `service` (ValueError for a name that is no table service)."""
    return TABLE_SERVICES[TableService(service)]
