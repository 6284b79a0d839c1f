"""Tasks: one per instant, compare-and-set transitions, claims, leases and fencing, operator actions."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import update

from tms.db import (
    TRANSITIONS,
    ArchiveTaskRepo,
    BackupTaskRepo,
    IllegalTransitionError,
    NotFoundError,
    OperatorAction,
    TaskRepo,
    TaskState,
    TtlTaskRepo,
)
from tms.db.models import Task
from tms.db.repos.tasks import FailureRecord
from tms.table_service import TableService
from tms.task_payload import (
    ArchivePayload,
    ArchiveRequest,
    BackupPayload,
    BackupRequest,
    PlannedPayload,
    PlanStatistics,
    TtlPayload,
    TtlRequest,
)

S = TaskState
INSTANT = "20250101000000000"


def _create(db, table_id, state=S.RUNNABLE, instant=INSTANT, service_name="compaction", **kw):
    with db.transaction() as session:
        task, created = TaskRepo(session).create(table_id=table_id, service=service_name, instant=instant,
                                                 state=state, **kw)
        assert created
        return task


def test_one_task_per_instant(db, table_id):
    first = _create(db, table_id, S.PENDING, payload=PlanStatistics(operations=3))
    with db.transaction() as session:
        again, created = TaskRepo(session).create(table_id=table_id, service="compaction", instant=INSTANT)
    assert not created and again.id == first.id and again.plan_stats == {"operations": 3}


def test_transition_is_compare_and_set(db, table_id):
    task = _create(db, table_id, S.PENDING, blockers=["20241231000000000"])
    with db.transaction() as session:
        moved = TaskRepo(session).transition(task.id, expected_state=S.PENDING, expected_version=task.version,
                                             to=S.BLOCKED)
    assert moved.state == S.BLOCKED and moved.version == task.version + 1
    with db.transaction() as session:  # stale version: lost, nothing changes
        assert TaskRepo(session).transition(task.id, expected_state=S.BLOCKED, expected_version=task.version,
                                            to=S.RUNNABLE) is None
        assert TaskRepo(session).transition(task.id, expected_state=S.PENDING, expected_version=moved.version,
                                            to=S.RUNNABLE) is None
    with db.transaction() as session:
        done = TaskRepo(session).transition(task.id, expected_state=S.BLOCKED, expected_version=moved.version,
                                            to=S.RUNNABLE, blockers=[])
    assert done.state == S.RUNNABLE and done.blockers == []


@pytest.mark.parametrize("source", list(S))
def test_only_legal_transitions(db, table_id, source):
    task = _create(db, table_id, source)
    for target in S:
        if target in TRANSITIONS[source] and target is not S.RUNNING:
            continue
        with db.transaction() as session, pytest.raises(IllegalTransitionError):
            TaskRepo(session).transition(task.id, expected_state=source, expected_version=task.version, to=target)


def test_concurrent_transitions_have_one_winner(db, table_id):
    task = _create(db, table_id, S.BLOCKED)
    barrier = threading.Barrier(8)
    wins: list[TaskState] = []

    def race(target):
        barrier.wait()
        with db.transaction() as session:
            if TaskRepo(session).transition(task.id, expected_state=S.BLOCKED, expected_version=task.version,
                                            to=target) is not None:
                wins.append(target)

    threads = [threading.Thread(target=race, args=(t,)) for t in [S.RUNNABLE, S.CANCELLED] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    with db.transaction() as session:
        assert TaskRepo(session).get(task.id).state == wins[0]


def test_claims_never_hand_one_task_to_two_workers(db, table_id):
    for i in range(5):
        _create(db, table_id, S.RUNNABLE, instant=f"2025010100000000{i}", priority=i)
    claimed: list[tuple[int, str]] = []
    barrier = threading.Barrier(10)

    def worker(name):
        barrier.wait()
        while True:
            with db.transaction() as session:
                task = TaskRepo(session).claim_next(owner=name, lease_seconds=30)
            if task is None:
                return
            claimed.append((task.id, name))

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [task_id for task_id, _ in claimed]
    assert len(ids) == 5 and len(set(ids)) == 5


def test_claim_order_respects_priority_and_run_after(db, table_id):
    low = _create(db, table_id, instant="20250101000000001", priority=1)
    high = _create(db, table_id, instant="20250101000000002", priority=9)
    with db.transaction() as session:
        session.execute(update(Task).where(Task.id == high.id).values(
            run_after=Task.created_at + timedelta(hours=1)))
    with db.transaction() as session:
        assert TaskRepo(session).claim_next(owner="w", lease_seconds=30).id == low.id
        assert TaskRepo(session).claim_next(owner="w", lease_seconds=30) is None


def test_an_archive_is_claimed_before_older_tasks_of_its_priority_and_after_higher_ones(db, table_id):
    compaction = _create(db, table_id, instant="20250101000000001", priority=1)
    clean = _create(db, table_id, instant="20250101000000002", priority=1, service_name="clean")
    archive = _create(db, table_id, instant="20250101000000003", priority=1, service_name="archive",
                      payload=ArchiveRequest())
    urgent = _create(db, table_id, instant="20250101000000004", priority=5)
    with db.transaction() as session:
        order = [TaskRepo(session).claim_next(owner="w", lease_seconds=30).id for _ in range(4)]
    assert order == [urgent.id, archive.id, compaction.id, clean.id]


def test_lease_fencing_and_finish(db, table_id):
    task = _create(db, table_id)
    with db.transaction() as session:
        repo = TaskRepo(session)
        claimed = repo.claim(task.id, expected_version=task.version, owner="w1", lease_seconds=30,
                             queue="default", requested_resources={"executor_memory_mb": 1024})
    assert claimed.state == S.RUNNING and claimed.attempt == 1 and claimed.fencing_token == 1
    token = claimed.fencing_token
    with db.transaction() as session:
        repo = TaskRepo(session)
        assert repo.holds_fence(task.id, token, lock=True)
        assert not repo.holds_fence(task.id, token + 1)
        assert repo.renew_lease(task.id, fencing_token=token, lease_seconds=60)
        assert repo.record_spark_app(task.id, fencing_token=token, spark_app_id="app-1")
        assert repo.finish(task.id, fencing_token=token + 1, succeeded=True) is None  # not the holder
        done = repo.finish(task.id, fencing_token=token, succeeded=True, log_tail="ok")
    assert done.state == S.SUCCEEDED and done.finished_at is not None and done.lease_owner is None
    with db.transaction() as session:
        repo = TaskRepo(session)
        assert not repo.holds_fence(task.id, token)
        (attempt,) = repo.attempts(task.id)
    assert (attempt.outcome, attempt.spark_app_id, attempt.worker, attempt.queue, attempt.log_tail) == (
        "SUCCEEDED", "app-1", "w1", "default", "ok")


def test_an_uncounted_failure_starts_a_new_retry_series(db, table_id):
    """A held plan's attempt (FailureRecord.uncounted) counts against no retry limit: the next attempt is the first
    of a new series; a counted failure keeps the series."""
    task = _create(db, table_id)
    for counted, series_start in ((True, 0), (False, 2)):
        with db.transaction() as session:
            repo = TaskRepo(session)
            current = repo.get(task.id)
            if current.state == S.FAILED:
                current = repo.transition(task.id, expected_state=S.FAILED, expected_version=current.version,
                                          to=S.RUNNABLE)
            claimed = repo.claim(task.id, expected_version=current.version, owner="w1", lease_seconds=30)
            failure = FailureRecord("crash" if counted else "held", True, "retried", 0.0, uncounted=not counted)
            done = repo.finish(task.id, fencing_token=claimed.fencing_token, succeeded=False, error="x",
                               failure=failure)
        assert (done.attempt, done.retry_series_start) == (claimed.attempt, series_start)


def test_expired_lease_is_requeued_and_the_old_holder_is_fenced_off(db, table_id):
    task = _create(db, table_id)
    with db.transaction() as session:
        first = TaskRepo(session).claim(task.id, expected_version=task.version, owner="w1", lease_seconds=0.05)
    time.sleep(0.1)
    with db.transaction() as session:
        repo = TaskRepo(session)
        assert [t.id for t in repo.expired_leases()] == [task.id]
        assert not repo.renew_lease(task.id, fencing_token=first.fencing_token, lease_seconds=30)
        requeued = repo.requeue_expired(task.id, fencing_token=first.fencing_token)
    assert requeued.state == S.RUNNABLE
    with db.transaction() as session:
        second = TaskRepo(session).claim(task.id, expected_version=requeued.version, owner="w2", lease_seconds=30)
    assert second.attempt == 2 and second.fencing_token > first.fencing_token
    with db.transaction() as session:
        repo = TaskRepo(session)
        assert repo.finish(task.id, fencing_token=first.fencing_token, succeeded=True) is None
        assert [a.outcome for a in repo.attempts(task.id)] == ["LOST", "RUNNING"]


@pytest.mark.parametrize("action, source, target", [
    (OperatorAction.RERUN, S.FAILED, S.RUNNABLE),
    (OperatorAction.RERUN, S.CANCELLED, S.RUNNABLE),
    (OperatorAction.SUSPEND, S.RUNNABLE, S.SUSPENDED),
    (OperatorAction.SUSPEND, S.BLOCKED, S.SUSPENDED),
    (OperatorAction.RESUME, S.SUSPENDED, S.RUNNABLE),
    (OperatorAction.CANCEL, S.PENDING, S.CANCELLED),
    (OperatorAction.CANCEL, S.SUSPENDED, S.CANCELLED),
])
def test_operator_actions(db, table_id, action, source, target):
    task = _create(db, table_id, source)
    with db.transaction() as session:
        assert TaskRepo(session).apply(task.id, action).state == target


def test_resume_and_rerun_stay_held_while_blockers_remain(db, table_id):
    task = _create(db, table_id, S.SUSPENDED, blockers=["20241231000000000"])
    with db.transaction() as session:
        assert TaskRepo(session).apply(task.id, OperatorAction.RESUME).state == S.BLOCKED


@pytest.mark.parametrize("action, source", [
    (OperatorAction.RERUN, S.SUCCEEDED), (OperatorAction.RERUN, S.RUNNING),
    (OperatorAction.SUSPEND, S.RUNNING), (OperatorAction.SUSPEND, S.PENDING),
    (OperatorAction.RESUME, S.RUNNABLE), (OperatorAction.CANCEL, S.SUCCEEDED),
    (OperatorAction.CANCEL, S.CANCELLED),
])
def test_illegal_operator_actions(db, table_id, action, source):
    task = _create(db, table_id, source)
    with db.transaction() as session, pytest.raises(IllegalTransitionError, match=f"it is {source}"):
        TaskRepo(session).apply(task.id, action)
    with db.transaction() as session:
        assert TaskRepo(session).get(task.id).state == source


def test_cancel_of_a_running_task_ends_its_lease_and_attempt(db, table_id):
    task = _create(db, table_id)
    with db.transaction() as session:
        claimed = TaskRepo(session).claim(task.id, expected_version=task.version, owner="w1", lease_seconds=30)
    with db.transaction() as session:
        assert TaskRepo(session).apply(task.id, OperatorAction.CANCEL).state == S.CANCELLED
    with db.transaction() as session:
        repo = TaskRepo(session)
        assert not repo.renew_lease(task.id, fencing_token=claimed.fencing_token, lease_seconds=30)
        assert repo.finish(task.id, fencing_token=claimed.fencing_token, succeeded=True) is None
        assert [a.outcome for a in repo.attempts(task.id)] == ["CANCELLED"]


def test_unknown_task(db):
    with db.transaction() as session, pytest.raises(NotFoundError):
        TaskRepo(session).apply(123456, OperatorAction.CANCEL)


def test_find_filters_and_counts(db, table_id):
    _create(db, table_id, S.RUNNABLE, instant="20250101000000001")
    _create(db, table_id, S.FAILED, instant="20250101000000002")
    with db.transaction() as session:
        repo = TaskRepo(session)
        tasks, total = repo.find(table_id=table_id, state=S.FAILED)
        assert total == 1 and tasks[0].instant == "20250101000000002"
        assert repo.find(service="clean")[1] == 0
        assert repo.counts_by_state() == {"RUNNABLE": 1, "FAILED": 1}
        assert repo.counts_by_state(table_id=table_id + 1) == {}



def test_a_tasks_payload_round_trips_through_the_database_typed_by_its_service(db, table_id):
    """What a task is recorded with comes back as its service's payload (tms.task_payload), and as the same JSON
    (what the API shows); keys this version does not know are kept; a payload of another service is refused
    and nothing is recorded."""
    stats = PlanStatistics(operations=2, operation_bytes=(5, 7), largest_file_group_bytes=7, total_bytes=12,
                           within_budget=True, scope="full")
    task = _create(db, table_id, payload=stats)
    with db.transaction() as session:
        read = TaskRepo(session).get(task.id)
        backup = BackupTaskRepo(session).request(table_id, TableService.BACKUP_RESTORE,
                                                 BackupRequest(root="s3://b/t", version=3, target_path="/r"))
        ttl = TtlTaskRepo(session).request(table_id, TableService.TTL, TtlRequest(policy={"tms.ttl.days": 5},
                                                                                   now="2026-01-01T00:00:00+00:00"))
        archive = ArchiveTaskRepo(session).request(table_id, ArchiveRequest(archive_through="20250101", instants=4))
        requests = [TaskRepo(session).get(t.id) for t in (backup, ttl, archive)]
    assert isinstance(read.payload, PlannedPayload) and read.payload.stats == stats
    assert read.plan_stats == {"operations": 2, "operation_bytes": [5, 7], "largest_file_group_bytes": 7,
                               "total_bytes": 12, "within_budget": True, "scope": "full"}
    assert [type(t.payload) for t in requests] == [BackupPayload, TtlPayload, ArchivePayload]
    restore, ttl_read, archive_read = (t.payload.body for t in requests)
    assert (restore.root, restore.version, restore.target_path, restore.catch_up) == ("s3://b/t", 3, "/r", False)
    assert (ttl_read.policy, ttl_read.now) == ({"tms.ttl.days": 5}, "2026-01-01T00:00:00+00:00")
    assert (archive_read.archive_through, archive_read.instants) == ("20250101", 4)
    assert all(t.payload.body.requested_at for t in requests), "the request's time is recorded with it"
    assert set(requests[2].plan_stats) == {"archive_through", "instants", "requested_at"}
    with pytest.raises(ValueError, match="clean task: its payload is PlanStatistics, not TtlRequest"), \
            db.transaction() as session:
        TaskRepo(session).create(table_id=table_id, service="clean", instant="20250101000000001",
                                 payload=TtlRequest(now="x"))
    with db.transaction() as session:
        assert TaskRepo(session).for_instant(table_id, "20250101000000001") is None
