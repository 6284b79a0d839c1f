"""Leader election with real `tms manager` processes on a scratch database: a killed leader is replaced
within the lease and one heartbeat; a leader paused past its lease (SIGSTOP) writes nothing when it wakes;
20 rounds of kills retry no task twice for one failure and duplicate no alert."""
from __future__ import annotations

import random
import signal
import time
from datetime import datetime, timedelta

import pytest
from manager_support import LEASE_SECONDS, ManagerProcesses
from sqlalchemy import any_, func, literal, select

from tms.db import Database, TableRepo, TaskRepo, TaskState
from tms.db.models import Alert, Instance, Lease, Task
from tms.db.repos.tasks import FailureRecord
from tms.db.testing import scratch_database

S = TaskState


@pytest.fixture
def database():
    with scratch_database() as url:
        db = Database(url)
        yield db
        db.dispose()


@pytest.fixture
def managers(database, tmp_path):
    created: list[ManagerProcesses] = []

    def make(**env: str) -> ManagerProcesses:
        group = ManagerProcesses(database, tmp_path, **env)
        created.append(group)
        return group
    yield make
    for group in created:
        group.stop_all()


def _table(database: Database, name: str) -> int:
    with database.transaction() as session:
        return TableRepo(session).register(base_path=f"/nowhere/{name}", name=name, database="default",
                                           table_type="MERGE_ON_READ", table_version=6).id


def _failed_due(database: Database, table_id: int, instant: str) -> tuple[int, int]:
    """A task whose only attempt failed retryably and whose retry is due now: (id, version)."""
    with database.transaction() as session:
        tasks = TaskRepo(session)
        task, _ = tasks.create(table_id=table_id, service="compaction", instant=instant, state=S.RUNNABLE)
        claimed = tasks.claim(task.id, expected_version=task.version, owner="test-worker", lease_seconds=30)
        done = tasks.finish(task.id, fencing_token=claimed.fencing_token, succeeded=False, error="crashed",
                            failure=FailureRecord("crash", True, "crash: attempt 2 of 3 in 0 s", 0.0))
        return done.id, done.version


def test_a_killed_leader_is_replaced_within_the_lease_and_one_heartbeat(database, managers):
    """Timed by the database clock and the standby's own beats, not the test's stopwatch (on a loaded machine
    a process may be starved): the killed leader's lease ends within one lease of its kill, and the standby
    takes it over at its first beat after that, then runs the leader's periodic work."""
    group = managers()
    group.start()
    group.start()
    holder, epoch, pid = group.wait_for_leader()
    standby = _wait_for_standby(database, holder)
    group.procs[pid].send_signal(signal.SIGKILL)
    with database.transaction() as session:
        killed_at = session.scalar(select(func.now()))
        old_expiry = session.scalar(select(Lease.expires_at).where(Lease.name == "manager"))
    assert old_expiry <= killed_at + timedelta(seconds=LEASE_SECONDS)  # its last renewal came before the kill
    beats: dict[datetime, bool] = {}  # the standby's beats as seen every 20 ms: heartbeat_at -> leading
    deadline = time.monotonic() + 120
    while True:
        with database.transaction() as session:
            at, info = session.execute(select(Instance.heartbeat_at, Instance.info).where(Instance.id == standby)).one()
            beats[at] = bool(info.get("leader"))
            lease = session.get(Lease, "manager")
            assert lease is not None
        if lease.holder == standby and lease.last_work_at is not None and lease.last_work_at >= lease.acquired_at:
            break
        assert time.monotonic() < deadline, "the standby never led"
        time.sleep(0.02)
    assert lease.epoch == epoch + 1 and lease.acquired_at >= old_expiry  # never before the old lease ended
    # Taken at the standby's first beat after the old lease ended: so within the lease and one heartbeat of the
    # kill, as far as the machine lets the standby beat. A beat asks for the lease, then records itself: one
    # beat may be recorded after the end of the lease it asked for before it, as a standby's; no other.
    late = sorted(at for at, leading in beats.items() if at > old_expiry and not leading)
    assert len(late) <= 1, (old_expiry, late)
    assert not late or late[0] < lease.acquired_at


def _wait_for_standby(database: Database, leader: str) -> str:
    deadline = time.monotonic() + 120
    while True:
        with database.transaction() as session:
            others = session.scalars(select(Instance.id).where(Instance.id != leader,
                                                               literal("manager") == any_(Instance.roles))).all()
        if others:
            return others[0]
        assert time.monotonic() < deadline, "no standby beats"
        time.sleep(0.05)


def test_a_leader_paused_past_its_lease_writes_nothing_when_it_wakes(database, managers):
    group = managers(TMS_MANAGER_RETRY_SECONDS="5")
    group.start()
    group.start()
    holder, epoch, pid = group.wait_for_leader()
    time.sleep(1)
    paused = group.procs[pid]
    paused.send_signal(signal.SIGSTOP)
    new_holder, new_epoch, new_pid = group.wait_for_leader(other_than=holder, timeout=120)
    assert new_epoch == epoch + 1
    time.sleep(0.5)  # the new leader's first retry run is done; its next is 5 s away
    task_id, version = _failed_due(database, _table(database, "paused"), "20260101000000000")
    log = group.log_of(pid)
    before_wake = log.stat().st_size
    paused.send_signal(signal.SIGCONT)  # its overdue jobs fire at once: the epoch check must stop them

    def promoted():
        with database.transaction() as session:
            return TaskRepo(session).get(task_id).state == S.RUNNABLE
    deadline = time.monotonic() + 120
    while not promoted():
        assert time.monotonic() < deadline, "the new leader never retried the task"
        time.sleep(0.05)

    def woke() -> str:
        return log.read_bytes()[before_wake:].decode()
    while f"no longer the leader (epoch {epoch})" not in woke():  # it noticed, however slowly it runs
        assert time.monotonic() < deadline, woke()
        time.sleep(0.05)
    time.sleep(1.5)  # its overdue jobs, had they not been stopped, would have run by now
    with database.transaction() as session:
        task = TaskRepo(session).get(task_id)
        assert task.version == version + 1  # made runnable exactly once
    assert f"[epoch {epoch}]" not in woke(), woke()  # no leader write of the old epoch after waking
    assert f"task {task_id}: retry" in group.log_of(new_pid).read_text()
    assert group.lease()[:2] == (new_holder, new_epoch)


@pytest.mark.slow
@pytest.mark.waiting
@pytest.mark.beside
def test_twenty_failovers_retry_no_task_twice_and_duplicate_no_alert(database, managers):
    group = managers(TMS_MANAGER_RETRY_SECONDS="0.2", TMS_MONITOR_HOLD_SECONDS="0.5")
    group.start()
    group.start()
    table_id = _table(database, "soak")
    rng = random.Random(20)
    tasks: dict[int, int] = {}
    held: list[int] = []
    holder, epoch, pid = group.wait_for_leader()
    for n in range(20):
        task_id, version = _failed_due(database, table_id, f"2026010100{n:02d}00000")
        tasks[task_id] = version
        with database.transaction() as session:  # a compensation hold: held_too_long fires for it
            blocked, _ = TaskRepo(session).create(table_id=table_id, service="compaction", state=S.BLOCKED,
                                                  instant=f"2026020100{n:02d}00000", blockers=["20250101000000000"])
            held.append(blocked.id)
        time.sleep(rng.uniform(0, 1.0))
        group.procs[pid].send_signal(signal.SIGKILL)
        group.start()
        holder, new_epoch, pid = group.wait_for_leader(other_than=holder, timeout=120)
        assert new_epoch > epoch
        epoch = new_epoch
    deadline = time.monotonic() + 120
    while True:
        with database.transaction() as session:
            states = dict(session.execute(select(Task.id, Task.state).where(Task.id.in_(list(tasks)))).all())
            alerted = session.scalar(select(func.count(func.distinct(Alert.subject)))
                                     .where(Alert.kind == "held_too_long"))
        if set(states.values()) == {S.RUNNABLE} and alerted == len(held):
            break
        assert time.monotonic() < deadline, (states, alerted)
        time.sleep(0.2)
    with database.transaction() as session:
        versions = dict(session.execute(select(Task.id, Task.version).where(Task.id.in_(list(tasks)))).all())
        per_subject = session.execute(select(Alert.subject, func.count()).where(Alert.kind == "held_too_long")
                                      .group_by(Alert.subject)).all()
    assert versions == {t: v + 1 for t, v in tasks.items()}  # each failure retried exactly once
    assert sorted(s for s, _ in per_subject) == sorted(f"task:{t}" for t in held)
    assert {count for _, count in per_subject} == {1}  # one alert per subject across 20 leaders
