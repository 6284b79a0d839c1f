"""Where a job goes and how big it is: queue choice (load, reservations, restrictions, capacity), sizing from
the plan's statistics, and claims that keep every queue within its capacity however many workers claim."""
import math
import random
import threading
from datetime import UTC, datetime

import pytest
from worker_support import ModelledTable, plan, rec, register, task, wait_for

from tms.db import InstanceRepo, QueueRecord, QueueRepo, TableRecord, TableRepo, TaskRepo, TaskState
from tms.hudi.table.properties import TableType
from tms.planning.stats import plan_stats
from tms.task_payload import ArchiveRequest, PlanStatistics
from worker.claim import ClaimLimits, claim_next
from worker.commands import python_job, spark_job
from worker.queues import admits, choose_queue
from worker.sizing import MB, python_task_memory_mb, size_job

LIMITS = ClaimLimits(lease_seconds=30, driver_memory_mb=768, driver_cores=1, max_executors_per_table=16)


NOW = datetime.now(UTC)


def queue(name, capacity=2, **fields) -> QueueRecord:
    values = {"kind": "local", "master": "local[2]", "spark_conf": {}, "executor_cores": 1,
              "min_executor_memory_mb": 512, "max_executor_memory_mb": 8192, "max_executors": 8,
              "reserved_for_priority": None, "allowed_databases": None, "allowed_tables": None,
              "allowed_services": None, "enabled": True, "warm_engine_enabled": False, "warm_engine_executors": 2,
              "warm_engine_executor_memory_mb": 1024, "warm_engine_executor_cores": 1, **fields}
    return QueueRecord(id=0, name=name, capacity=capacity, created_at=NOW, updated_at=NOW, **values)


def table(name="trips", database="lake", priority=0, preferred=None) -> TableRecord:
    return TableRecord(id=0, base_path=f"/nowhere/{name}", name=name, database=database,
                       table_type=TableType.MERGE_ON_READ, table_version=8, created_at=NOW, updated_at=NOW,
                       priority=priority, queue=preferred)


# --- queue choice ---------------------------------------------------------------------------------------
def test_least_loaded_queue_relative_to_its_capacity():
    small, big = queue("small", capacity=2), queue("big", capacity=10)
    assert choose_queue([small, big], {"small": 1, "big": 4}, table(), "compaction").name == "big"  # 40% < 50%
    assert choose_queue([small, big], {"small": 0, "big": 4}, table(), "compaction").name == "small"
    assert choose_queue([small, big], {"small": 2, "big": 10}, table(), "compaction") is None, "all full"


def test_priority_tables_get_their_reserved_queues_first_and_others_never():
    shared, reserved = queue("shared", capacity=4), queue("vip", capacity=1, reserved_for_priority=10)
    vip, plain = table(priority=10), table(priority=0)
    assert choose_queue([shared, reserved], {}, vip, "compaction").name == "vip"
    assert choose_queue([shared, reserved], {"vip": 1}, vip, "compaction").name == "shared", "reserved full"
    assert choose_queue([shared, reserved], {}, plain, "compaction").name == "shared"
    assert choose_queue([reserved], {}, plain, "compaction") is None


def test_a_tables_preferred_queue_comes_first():
    a, b = queue("a"), queue("b")
    assert choose_queue([a, b], {"a": 1}, table(preferred="a"), "clean").name == "a"
    assert choose_queue([a, b], {"a": 2}, table(preferred="a"), "clean").name == "b", "preferred but full"


def test_restrictions_by_database_table_and_action():
    q = queue("etl", allowed_databases=["lake"], allowed_tables=["lake.trips", "lake.rides"],
              allowed_services=["compaction", "clean"])
    assert admits(q, table("trips", "lake"), "compaction")
    assert not admits(q, table("trips", "other"), "compaction"), "database"
    assert not admits(q, table("users", "lake"), "compaction"), "table"
    assert not admits(q, table("trips", "lake"), "clustering"), "action"
    assert choose_queue([queue("off", enabled=False)], {}, table(), "clean") is None


# --- sizing ---------------------------------------------------------------------------------------------
def test_sizing_follows_the_plan_within_the_queue_and_table_caps():
    q = queue("q", min_executor_memory_mb=512, max_executor_memory_mb=4096, max_executors=8, executor_cores=2)
    sized = size_job(PlanStatistics(operations=3, largest_file_group_bytes=1000 * MB), q, driver_memory_mb=1024,
                     driver_cores=2, max_executors_per_table=16)
    assert (sized.executor_memory_mb, sized.executors, sized.executor_cores) == (1400, 3, 2)
    assert (sized.driver_memory_mb, sized.driver_cores) == (1024, 2)
    assert size_job(PlanStatistics(operations=50, largest_file_group_bytes=10 * MB), q, driver_memory_mb=1024,
                    driver_cores=1, max_executors_per_table=16).executor_memory_mb == 512, "the queue's minimum"
    huge = size_job(PlanStatistics(operations=50, largest_file_group_bytes=10_000 * MB), q, driver_memory_mb=1024,
                    driver_cores=1, max_executors_per_table=5)
    assert (huge.executor_memory_mb, huge.executors) == (4096, 5), "the queue's maximum, the table's cap"
    assert size_job(PlanStatistics(operations=50, largest_file_group_bytes=1), q, driver_memory_mb=1024, driver_cores=1,
                    max_executors_per_table=16).executors == 8, "the queue's cap"


def test_python_workers_memory_is_sized_into_the_executor_overhead_and_grows_with_oom_retries():
    """The merge runs in the Python workers, outside the JVM heap: on YARN and Kubernetes their memory counts
    against `spark.executor.memoryOverhead`, one worker per executor core."""
    q = queue("q", min_executor_memory_mb=512, max_executor_memory_mb=16384, executor_cores=2)
    stats = PlanStatistics(operations=3, largest_file_group_bytes=100 * MB, operation_bytes=[100 * MB, 40 * MB, 0])
    sized = size_job(stats, q, driver_memory_mb=1024, driver_cores=1, max_executors_per_table=16)
    per_task = python_task_memory_mb(100 * MB)
    assert per_task >= 28 * 100, "28x the file group on storage, as measured"
    assert sized.python_memory_mb == 2 * per_task
    assert sized.spark_conf("yarn")["spark.executor.memoryOverhead"] == f"{2 * per_task + 384}m"
    retried = size_job(stats, q, driver_memory_mb=1024, driver_cores=1, max_executors_per_table=16,
                       memory_factor=1.5)
    assert retried.python_memory_mb == math.ceil(2 * per_task * 1.5), "an attempt out of memory grows it too"
    # A clustering task merges a whole group of file groups: its largest operation counts.
    grouped = size_job(PlanStatistics(operations=1, largest_file_group_bytes=10 * MB, operation_bytes=[150 * MB]), q,
                       driver_memory_mb=1024, driver_cores=1, max_executors_per_table=16, service="clustering")
    assert grouped.python_memory_mb == 2 * python_task_memory_mb(150 * MB)
    assert size_job(stats, q, driver_memory_mb=1024, driver_cores=1, max_executors_per_table=16,
                    service="clean").python_memory_mb == 2 * python_task_memory_mb(0), "a clean deletes files only"
    huge = size_job(PlanStatistics(operations=1, largest_file_group_bytes=5000 * MB), q, driver_memory_mb=1024,
                    driver_cores=1, max_executors_per_table=16)
    assert huge.python_memory_mb == 16384, "within the queue's maximum"


def test_a_compactions_memory_follows_its_merge_budget_not_its_file_group():
    """A compaction or clustering whose merges stream within the budget (Parquet, no record TTL) asks for what the
    budget implies, for a 10 GB file group as for a 256 MB one; a small group still asks for what it needs; a
    plan merged in memory (Lance files, a record TTL) follows its group; stats recorded before `within_budget`
    keep the old rule (compaction bounded, clustering not)."""
    q = queue("q", min_executor_memory_mb=128, max_executor_memory_mb=65536, executor_cores=1)
    budget = 256 * MB

    def sized(group_bytes, service="compaction", within_budget=True):
        stats = {"operations": 1, "largest_file_group_bytes": group_bytes, "within_budget": within_budget}
        if within_budget is None:
            del stats["within_budget"]
        return size_job(PlanStatistics(**stats), q, driver_memory_mb=1024, driver_cores=1, max_executors_per_table=16,
                        service=service, budget_bytes=budget)

    huge, big, small = sized(10_000 * MB), sized(256 * MB), sized(1 * MB)
    assert huge.python_memory_mb == big.python_memory_mb == python_task_memory_mb(10_000 * MB, budget)
    assert huge.python_memory_mb == 256 + 6 * 256, "the base and six budgets, not 32x 10 GB"
    assert huge.executor_memory_mb == big.executor_memory_mb == math.ceil(256 * 1.4)
    assert small.python_memory_mb == python_task_memory_mb(1 * MB) < big.python_memory_mb
    assert sized(10_000 * MB, "clustering").python_memory_mb == huge.python_memory_mb
    assert sized(10_000 * MB, "clustering").executor_memory_mb == huge.executor_memory_mb
    for service in ("compaction", "clustering"):
        assert sized(10_000 * MB, service, within_budget=False).python_memory_mb == 65536, "32x its group, capped"
    assert sized(10_000 * MB, "compaction", within_budget=None).python_memory_mb == huge.python_memory_mb
    assert sized(10_000 * MB, "clustering", within_budget=None).python_memory_mb == 65536


def test_a_tables_merge_budget_policy_sizes_its_compactions_and_reaches_their_jobs(tmp_path, db, local_queue):
    """`hoodie.memory.compaction.max.size` in a table's policy: its compactions are sized from it (not from the
    worker's TMS_MERGE_MEMORY_BYTES) and their jobs merge within it (`--option`); other tables keep the worker's."""
    local_queue(capacity=4, min_executor_memory_mb=128, max_executor_memory_mb=65536)
    limits = ClaimLimits(lease_seconds=30, driver_memory_mb=768, driver_cores=1, max_executors_per_table=16,
                         merge_budget_bytes=256 * MB)
    with db.transaction() as session:
        for name, policies in (("own", {"hoodie.memory.compaction.max.size": 64 * MB}), ("worker", {})):
            row = TableRepo(session).register(base_path=f"/nowhere/{name}", name=name, database="lake",
                                              policies=policies, table_type="MERGE_ON_READ", table_version=8)
            TaskRepo(session).create(table_id=row.id, service="compaction", instant=f"2025010100000{row.id:04d}",
                                     state=TaskState.RUNNABLE, priority=0,
                                     payload=PlanStatistics(operations=1, largest_file_group_bytes=10_000 * MB))
    claimed = {c.table_name: c for c in (claim_next(db, "w", limits), claim_next(db, "w", limits))}

    own, worker = claimed["own"], claimed["worker"]
    assert own.resources.python_memory_mb == python_task_memory_mb(10_000 * MB, 64 * MB)
    assert worker.resources.python_memory_mb == python_task_memory_mb(10_000 * MB, 256 * MB)
    assert own.resources.python_memory_mb < worker.resources.python_memory_mb
    command, _ = spark_job(own, py_files=tmp_path / "tms-jobs.zip", fence_url="http://tms/fence")
    assert f"hoodie.memory.compaction.max.size={64 * MB}" in command
    assert python_job(own, fence_url="http://tms/fence")[0].count(f"hoodie.memory.compaction.max.size={64 * MB}") == 1
    assert not any("hoodie.memory" in arg for arg in spark_job(worker, py_files=tmp_path / "z.zip",
                                                               fence_url="http://tms/fence")[0])


def test_a_plan_with_skewed_file_groups_asks_for_1_4x_its_largest_group(tmp_path, service, db, local_queue):
    local_queue(min_executor_memory_mb=1, max_executor_memory_mb=65536)
    t = ModelledTable(tmp_path / "skewed", "MERGE_ON_READ", 8)
    rng = random.Random(7)  # incompressible names: sf's file group is big, the others are small
    t.write([rec(i, 10, rng.randbytes(2000).hex() if i % 3 == 0 else None) for i in range(3000)], "insert")
    t.write([rec(i, 20) for i in range(0, 3000, 50)])
    table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
    [task_id] = plan(db, table_id, "compaction")
    stats = plan_stats(t.table(), task(db, task_id).instant)
    assert stats.largest_file_group_bytes > 10 * min(stats.operation_bytes), "one group dwarfs the others"

    claimed = claim_next(db, "w1", LIMITS)

    expected = math.ceil(stats.largest_file_group_bytes * 1.4 / MB)
    assert claimed.resources.executor_memory_mb == expected
    assert claimed.resources.executors == stats.operations
    assert task(db, task_id).requested_resources["executor_memory_mb"] == expected
    command, _ = spark_job(claimed, py_files=tmp_path / "tms-jobs.zip", fence_url="http://tms/fence")
    assert f"spark.executor.memory={expected}m" in command and "spark.driver.memory=768m" in command
    assert command[command.index("--master") + 1] == "local[2]"
    assert command[-2:] == ["--fence-url", "http://tms/fence"]


# --- claims ---------------------------------------------------------------------------------------------
def _runnable_tasks(db, n: int, priority: int = 0, services: tuple[str, ...] = ("clean",)) -> list[int]:
    """`n` runnable tasks of a new table, of `services` in turn."""
    with db.transaction() as session:
        row = TableRepo(session).register(base_path=f"/nowhere/p{priority}", name=f"t{priority}", database="lake",
                                          table_type="MERGE_ON_READ", table_version=8, priority=priority)
        return [TaskRepo(session).create(table_id=row.id, service=services[i % len(services)],
                                         instant=f"2025010100000{i:04d}", state=TaskState.RUNNABLE,
                                         priority=priority,
                                         payload=ArchiveRequest() if services[i % len(services)] == "archive"
                                         else PlanStatistics(operations=1, largest_file_group_bytes=0))[0].id
                for i in range(n)]


def test_a_tables_rollbacks_go_before_its_other_services(db, local_queue):
    local_queue(capacity=4)
    compaction, rollback = _runnable_tasks(db, 2, services=("compaction", "rollback"))
    first = claim_next(db, "w", LIMITS)
    assert first.task_id == rollback, "the older compaction waits for the table's rollback"
    assert claim_next(db, "w", LIMITS) is None, "and keeps waiting while the rollback runs"
    with db.transaction() as session:
        TaskRepo(session).finish(rollback, fencing_token=first.fencing_token, succeeded=True)
    assert claim_next(db, "w", LIMITS).task_id == compaction


def test_an_archival_runs_in_the_light_lane_beside_a_full_queue_and_takes_none_of_its_capacity(db, local_queue):
    local_queue(capacity=1)
    clean, archive, later = _runnable_tasks(db, 3, services=("clean", "archive", "clean"))
    slot = claim_next(db, "w", LIMITS, light=False)
    assert slot.task_id == clean, "the slots take no light task, though archival is claimed first"
    assert claim_next(db, "w", LIMITS, light=False) is None, "the queue is full"
    lane = claim_next(db, "w", LIMITS, light=True)
    assert (lane.task_id, lane.queue_name) == (archive, "local"), "the lane runs it whatever the queue's load"
    assert claim_next(db, "w", LIMITS, light=True) is None, "only light tasks in the lane"
    with db.transaction() as session:
        TaskRepo(session).finish(clean, fencing_token=slot.fencing_token, succeeded=True)
    assert claim_next(db, "w", LIMITS, light=False).task_id == later, "the running archival uses no capacity"


def test_without_a_light_lane_an_archival_takes_a_slot_first(db, local_queue):
    local_queue(capacity=1)
    clean, archive = _runnable_tasks(db, 2, services=("clean", "archive"))
    assert claim_next(db, "w", LIMITS).task_id == archive


def test_concurrent_claims_never_exceed_a_queues_capacity(db, local_queue):
    local_queue("a", capacity=2)
    local_queue("b", capacity=1)
    _runnable_tasks(db, 8)
    claimed, barrier = [], threading.Barrier(6)

    def claim(n):
        barrier.wait()
        claimed.append(claim_next(db, f"w{n}", LIMITS))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    got = [c for c in claimed if c is not None]
    assert sorted(c.queue_name for c in got) == ["a", "a", "b"]
    assert len({c.task_id for c in got}) == 3
    with db.transaction() as session:
        assert TaskRepo(session).running_by_queue() == {"a": 2, "b": 1}


def test_a_task_whose_queues_are_full_does_not_block_others(db, local_queue):
    local_queue("shared", capacity=1)
    local_queue("vip", capacity=1, reserved_for_priority=5)
    vip_tasks = _runnable_tasks(db, 3, priority=5)
    plain = _runnable_tasks(db, 1, priority=0)
    first, second = claim_next(db, "w", LIMITS), claim_next(db, "w", LIMITS)
    assert (first.task_id, first.queue_name) == (vip_tasks[0], "vip")
    assert (second.task_id, second.queue_name) == (vip_tasks[1], "shared"), "vip spills over to shared"
    assert claim_next(db, "w", LIMITS) is None, "both queues full"
    with db.transaction() as session:
        QueueRepo(session).put("shared", kind="local", master="local[1]", capacity=2)
    third = claim_next(db, "w", LIMITS)
    assert third.queue_name == "shared" and third.task_id in (vip_tasks[2], *plain)


@pytest.mark.parametrize("configured", [False, True])
def test_a_first_start_creates_the_default_local_queue(db, start_worker, local_queue, configured):
    if configured:
        local_queue("yarn-etl", kind="yarn", master="yarn")
    worker = start_worker(worker_slots=3)
    wait_for(lambda: _instances(db) == [worker.id], what="the worker's first turn")
    with db.transaction() as session:
        queues = [(q.name, q.kind, q.master, q.capacity) for q in QueueRepo(session).list()]
    assert queues == ([("yarn-etl", "yarn", "yarn", 2)] if configured else [("local", "local", "local[*]", 3)])


def _instances(db) -> list[str]:
    with db.transaction() as session:
        return [i.id for i in InstanceRepo(session).list()]
