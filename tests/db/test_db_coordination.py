"""Leases (leader election with epochs), instance heartbeats, the planning lock, alerts, tokens, queues."""
from __future__ import annotations

import time

import pytest

from tms.db import (
    AlertRepo,
    ConflictError,
    InstanceRepo,
    LeaseRepo,
    NotFoundError,
    QueueRepo,
    TableRepo,
    TaskRepo,
    TaskState,
    TokenRepo,
)


def test_lease_has_one_holder_and_a_growing_epoch(db):
    with db.transaction() as session:
        leases = LeaseRepo(session)
        epoch = leases.acquire("leader", "a", ttl_seconds=0.2)
        assert epoch == 1
        assert leases.acquire("leader", "b", ttl_seconds=10) is None  # held by a
        assert leases.acquire("leader", "a", ttl_seconds=0.2) == 1  # renewal keeps the epoch
    time.sleep(0.3)
    with db.transaction() as session:
        leases = LeaseRepo(session)
        assert leases.acquire("leader", "b", ttl_seconds=10) == 2  # expired: taken over
        assert not leases.holds("leader", "a", 1)
        assert leases.holds("leader", "b", 2)
        leases.release("leader", "b", 2)
        assert leases.acquire("leader", "a", ttl_seconds=10) == 3


def test_instances_heartbeat(db):
    with db.transaction() as session:
        repo = InstanceRepo(session)
        repo.heartbeat("i1", roles=["worker"], host="h", pid=1, version="dev")
        repo.heartbeat("i1", roles=["worker"], host="h", pid=1, version="dev", info={"slots": 2})
        assert [(i.id, i.info) for i in repo.list()] == [("i1", {"slots": 2})]
        repo.remove("i1")
        assert repo.list() == []


def test_planning_lock_is_skipped_by_a_second_planner(db, table_id):
    with db.transaction() as first:
        assert TableRepo(first).lock_for_planning(table_id) is not None
        with db.transaction() as second:
            assert TableRepo(second).lock_for_planning(table_id) is None
    with db.transaction() as session:
        assert TableRepo(session).lock_for_planning(table_id) is not None


def test_register_twice_is_a_conflict_and_running_tasks_block_unregistering(db, table_id):
    with db.transaction() as session, pytest.raises(ConflictError, match="already registered"):
        TableRepo(session).register(base_path="/data/t1", name="t1", database="default",
                                    table_type="MERGE_ON_READ", table_version=6)
    with db.transaction() as session:
        TaskRepo(session).create(table_id=table_id, service="clean", instant="20250101000000000",
                                 state=TaskState.RUNNABLE)
        TaskRepo(session).claim_next(owner="w", lease_seconds=30)
    with db.transaction() as session, pytest.raises(ConflictError, match="running"):
        TableRepo(session).unregister(table_id)


def test_alerts_dedupe_by_open_fingerprint(db, table_id):
    with db.transaction() as session:
        repo = AlertRepo(session)
        first, created = repo.raise_alert(kind="task_failed", severity="warning", message="m",
                                          fingerprint="t1:failed", table_id=table_id)
        again, created_again = repo.raise_alert(kind="task_failed", severity="warning", message="m",
                                                fingerprint="t1:failed", table_id=table_id)
        assert created and not created_again and again.id == first.id
        assert not repo.is_muted(first)
        repo.resolve("t1:failed")
        _, reopened = repo.raise_alert(kind="task_failed", severity="warning", message="m", fingerprint="t1:failed")
        assert reopened
        assert repo.find(open_only=True)[1] == 1 and repo.find()[1] == 2


def test_tokens_are_stored_hashed(db):
    with db.transaction() as session:
        repo = TokenRepo(session)
        row, token = repo.create("operator", "ci")
        assert token not in row.token_hash and repo.role_of(token) == "operator"
        assert repo.role_of(token + "x") is None
        repo.revoke(row.id)
        assert repo.role_of(token) is None
        with pytest.raises(NotFoundError):
            repo.revoke(row.id + 1000)
        with pytest.raises(ValueError):
            repo.create("root")


def test_queues_put_replaces(db):
    with db.transaction() as session:
        repo = QueueRepo(session)
        repo.put("default", kind="local", master="local[*]")
        repo.put("default", kind="local", master="local[2]", capacity=3)
        (queue,) = repo.list()
        assert (queue.master, queue.capacity) == ("local[2]", 3)
        repo.delete("default")
        with pytest.raises(NotFoundError):
            repo.get("default")
