"""Claiming work: the most urgent runnable task that has a queue with a free slot, sized for that queue,
claimed with a new fencing token and lease (TaskRepo.claim), and the tasks of dead workers handed back.
A table's pending rollbacks go before its other services (as in Hudi, failed writes are rolled back first).

The claim holds the queue rows locked while it counts their running jobs, so two workers never fill one
free slot; the runnable tasks are read with SKIP LOCKED, so workers never wait for each other's rows."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from tms.db import Database, EngineRepo, QueueRepo, TableRecord, TableRepo, TaskRecord, TaskRepo, hash_secret
from tms.execute.engine_code import EngineSpec
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.records.merge_budget import MAX_SIZE
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.stats import plan_stats
from tms.table_service import LIGHT_SERVICES, TableService, names_request
from tms.task_payload import PayloadBody, PlanStatistics, statistics_of

from .engine_choice import choose_engine
from .fence import new_fence_key
from .queues import choose_queue
from .sizing import JobResources, size_job

log = logging.getLogger(__name__)
CANDIDATES = 20  # runnable tasks looked at per claim: those whose queues are full are passed over


@dataclass(frozen=True)
class Shadow:
    rollout: str
    engine: EngineSpec


@dataclass(frozen=True)
class ClaimedTask:
    task_id: int
    fencing_token: int
    attempt: int
    service: str
    instant: str
    table_name: str
    base_path: str
    queue_name: str
    queue_kind: str
    master: str
    queue_spark_conf: dict[str, str]
    resources: JobResources
    fence_key: str  # the attempt's secret for the fence endpoint (only its hash is stored)
    # The table's concurrency control (hoodie.write.lock.*): the job, and the rollback of a failed attempt, run
    # under the writers' lock.
    concurrency_options: dict[str, str] = field(default_factory=dict)
    attempts_in_series: int = 1  # this attempt's number since the task's last rerun (retries count against it)
    engine: EngineSpec | None = None  # the engine a rollout rule chose (None: the worker's own job code)
    # A shadow rule's canary: it runs the plan on a scratch copy, compared with `engine`'s committed result.
    shadow: Shadow | None = None
    plan: PayloadBody = PlanStatistics()  # the task's recorded payload (a backup's root, ...: tms.task_payload)
    # Options the job takes beside the concurrency control: a merge budget from the table's policy.
    merge_options: dict[str, str] = field(default_factory=dict)

    @property
    def job_options(self) -> dict[str, str]:
        """Every `--option` of the task's job."""
        return {**self.concurrency_options, **self.merge_options}


@dataclass(frozen=True)
class ClaimLimits:
    lease_seconds: float
    driver_memory_mb: int
    driver_cores: int
    max_executors_per_table: int
    merge_budget_bytes: int | None = None  # a compaction's merge budget (TMS_MERGE_MEMORY_BYTES)
    context: HudiContext = DEFAULT_CONTEXT  # what plans are read with (tms.table_context)


def claim_next(database: Database, owner: str, limits: ClaimLimits, *, light: bool | None = None) -> ClaimedTask | None:
    """Claim one task for `owner`, or None when nothing is runnable or every usable queue is full. `light` True:
    only a task of LIGHT_SERVICES, whatever the queues' load (its job runs no Spark); False: none of them; None:
    any. A queue's capacity counts its running jobs other than light ones."""
    fence_key = new_fence_key()
    with database.transaction() as session:
        queues = QueueRepo(session).lock_all()
        tasks = TaskRepo(session)
        running = {} if light else tasks.running_by_queue(light=False)
        candidates = tasks.claimable(limit=CANDIDATES, light=light)
        rolling_back = tasks.tables_rolling_back({t.table_id for t in candidates})
        for task in candidates:
            if task.service != TableService.ROLLBACK and task.table_id in rolling_back:
                continue
            table = TableRepo(session).by_id(task.table_id)
            if table is None:  # unregistered since the task was read
                continue
            queue = choose_queue(queues, {} if task.service in LIGHT_SERVICES else running, table, task.service)
            if queue is None:
                continue
            merge_options = _merge_options(table)
            resources = size_job(_plan_stats(task, table, limits.context), queue,
                                 driver_memory_mb=limits.driver_memory_mb, driver_cores=limits.driver_cores,
                                 max_executors_per_table=limits.max_executors_per_table,
                                 memory_factor=task.memory_factor, service=task.service,
                                 budget_bytes=int(merge_options.get(MAX_SIZE, 0)) or limits.merge_budget_bytes)
            # A backup's or TTL task's job is the worker's own code: no engine runs it.
            choice = None if names_request(task.service) else \
                choose_engine(session, task_id=task.id, table=table, queue=queue.name, service=task.service)
            claimed = tasks.claim(task.id, expected_version=task.version, owner=owner,
                                  lease_seconds=limits.lease_seconds, queue=queue.name,
                                  requested_resources=resources.as_dict(), fence_key_hash=hash_secret(fence_key))
            if claimed is None:  # an operator changed it since it was read
                continue
            if choice is not None:
                EngineRepo(session).record_on_attempt(claimed.id, fencing_token=claimed.fencing_token,
                                                      engine=choice.engine.name, rollout=choice.rollout)
            return ClaimedTask(task_id=claimed.id, fencing_token=claimed.fencing_token, attempt=claimed.attempt,
                               service=claimed.service, instant=claimed.instant, table_name=table.name,
                               base_path=table.base_path, queue_name=queue.name, queue_kind=queue.kind,
                               master=queue.master, queue_spark_conf=dict(queue.spark_conf), resources=resources,
                               fence_key=fence_key, concurrency_options=dict(table.concurrency_options),
                               attempts_in_series=claimed.attempt - claimed.retry_series_start,
                               engine=choice.engine if choice else None, plan=claimed.payload.body,
                               shadow=Shadow(choice.rollout, choice.shadow) if choice and choice.shadow else None,
                               merge_options=merge_options)
    return None


def _plan_stats(task: TaskRecord, table: TableRecord, context: HudiContext) -> PlanStatistics:
    """The statistics the planner recorded; for a task recorded without them, measured from the plan. A task
    that names its request (a backup's, ...) has no plan on the timeline: its job is sized minimally."""
    recorded = statistics_of(task.payload)
    if recorded.measured or names_request(task.service):
        return recorded
    try:
        stats = plan_stats(HudiTable.load(table.base_path, context=context), task.instant)
    except Exception as exc:  # an unreadable plan fails in the job, with its own error; size it minimally
        log.warning("cannot measure plan %s of %s: %s", task.instant, table.base_path, exc)
        return PlanStatistics()
    return PlanStatistics(operations=stats.operations, largest_file_group_bytes=stats.largest_file_group_bytes,
                          operation_bytes=stats.operation_bytes, within_budget=stats.within_budget)


def requeue_expired_leases(database: Database) -> list[int]:
    """Hand the tasks whose lease expired (their worker died or hangs) back as RUNNABLE; their attempts are
    LOST, and the next claim's new fencing token keeps the old job from completing the instant."""
    requeued = []
    with database.transaction() as session:
        tasks = TaskRepo(session)
        for task in tasks.expired_leases():
            if tasks.requeue_expired(task.id, fencing_token=task.fencing_token) is not None:
                requeued.append(task.id)
    return requeued


def _merge_options(table: TableRecord) -> dict[str, str]:
    """The merge budget the table's policy sets (the job merges within it, and is sized from it); none: the
    worker's TMS_MERGE_MEMORY_BYTES."""
    budget = table.policy.merge_memory_bytes
    return {MAX_SIZE: str(budget)} if budget else {}
