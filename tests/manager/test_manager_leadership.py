"""The leader lease in one process: one holder at a time, the epoch growing with each new holder; a leader
stops before its lease ends when it cannot renew; a write fenced with a lost epoch commits nothing."""
from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from tms.db import AlertRepo, LeaseRepo, Sighting
from tms.leadership import LEASE_NAME, LeaderLease, NotLeader
from tms.leadership import lease as leadership


def _end_lease(db) -> None:
    """The holder's lease ends in the database now, as if it had not renewed it (no sleeping: a loaded machine
    may stall a test longer than any short lease)."""
    with db.transaction() as session:
        session.execute(text("UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = :n"),
                        {"n": LEASE_NAME})


def test_one_holder_at_a_time_and_the_epoch_grows_with_each_new_holder(db):
    a = LeaderLease(db, "a", lease_seconds=60, heartbeat_seconds=10)
    b = LeaderLease(db, "b", lease_seconds=60, heartbeat_seconds=10)
    assert a.try_acquire() == 1 and b.try_acquire() is None
    assert a.try_acquire() == 1  # a renewal keeps the epoch
    _end_lease(db)  # a does not renew: its lease ends in the database
    assert b.try_acquire() == 2 and a.try_acquire() is None and a.epoch is None
    b.release()
    assert a.try_acquire() == 3


def test_a_standby_knows_when_the_leaders_lease_ends_and_takes_it_then(db):
    """A standby tries again when the leader's lease ends, not at its next heartbeat: after a leader's death
    it takes over within the lease."""
    a = LeaderLease(db, "a", lease_seconds=60, heartbeat_seconds=10)
    b = LeaderLease(db, "b", lease_seconds=60, heartbeat_seconds=10)
    assert a.vacant_in() is None and a.try_acquire() == 1 and a.vacant_in() is None  # the holder waits for no one
    assert b.try_acquire() is None
    vacant = b.vacant_in()
    assert vacant is not None and 50 < vacant <= 60
    _end_lease(db)
    assert b.try_acquire() == 2 and b.vacant_in() is None
    assert a.try_acquire() is None and a.vacant_in() == pytest.approx(60, abs=10)


def test_a_leader_that_cannot_renew_stops_before_its_lease_ends(db, monkeypatch):
    a = LeaderLease(db, "a", lease_seconds=60, heartbeat_seconds=10)
    assert a.try_acquire() == 1 and a.epoch == 1
    now = time.monotonic()
    monkeypatch.setattr(leadership.time, "monotonic", lambda: now + 50.5)  # past lease - margin (50 s)
    assert a.epoch is None
    with db.transaction() as session:
        assert LeaseRepo(session).holds(LEASE_NAME, "a", 1)  # the database still says a leads
    with pytest.raises(NotLeader):
        with a.fenced(1):
            pass


def test_a_write_fenced_with_a_lost_epoch_commits_nothing(db, monkeypatch):
    a = LeaderLease(db, "a", lease_seconds=60, heartbeat_seconds=10)
    b = LeaderLease(db, "b", lease_seconds=60, heartbeat_seconds=10)
    assert a.try_acquire() == 1
    _end_lease(db)
    assert b.try_acquire() == 2
    # a's local clock was fooled (as by a pause the monotonic clock did not see): only the database check is left.
    monkeypatch.setattr(a, "_valid_until", time.monotonic() + 100)
    monkeypatch.setattr(a, "_epoch", 1)
    with pytest.raises(NotLeader, match="lost the lease of epoch 1"):
        with a.fenced(1) as session:
            AlertRepo(session).fire("no_leader", "test", Sighting("critical", "written by a stale leader"))
    with db.transaction() as session:
        assert AlertRepo(session).find()[1] == 0
    with b.fenced(2) as session:
        AlertRepo(session).fire("no_leader", "test", Sighting("critical", "written by the leader"))
    with db.transaction() as session:
        assert AlertRepo(session).find()[1] == 1
        assert LeaseRepo(session).get(LEASE_NAME).last_work_at is not None
