"""`no_leader`: when no manager has led for longer than the lease and one heartbeat, the service (which runs
even when no manager does) fires one alert and delivers it to the webhooks itself; the first manager to
lead resolves it, and the resolution is delivered too. Managers that fail over as designed never fire it."""
from __future__ import annotations

import signal
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta

import pytest
from manager_support import ManagerProcesses
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from support import TIMEOUT_SCALE, served

from service.app import create_app
from tms.config import Settings
from tms.db import Database, WebhookRepo
from tms.db.models import Alert, Lease
from tms.leadership import LeaderLease, LeaderWatch
from tms.webhooks.payload import verify

SECRET = "no-leader-secret"
# The service looks every 0.2 s; a lease of 4 s and a heartbeat of 1 s (roomy: a loaded machine may delay a
# renewal by a second or two): no leader for 5 s fires it.
FAST_WATCH = {"heartbeat_seconds": 0.2, "manager_lease_seconds": 4.0, "manager_heartbeat_seconds": 1.0}


def _wait(what: str, condition: Callable[[], object], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.1)


def _no_leader_alerts(db: Database) -> list[Alert]:
    with db.transaction() as session:
        return list(session.scalars(select(Alert).where(Alert.kind == "no_leader").order_by(Alert.id)))


def _webhook(db: Database, url: str) -> None:
    with db.transaction() as session:
        WebhookRepo(session).create(url=url, secret=SECRET, kinds=["no_leader"], min_severity="critical",
                                    format="json")


def _received(receiver, state: str) -> list:
    with receiver.lock:
        return [r for r in receiver.accepted if r.document["type"] == "no_leader" and r.document["state"] == state]


@pytest.fixture
def watching_service(db):
    """watching_service() starts a second service on the test's database, looking for a leader every 0.2 s."""
    with ExitStack() as stack:
        yield lambda: stack.enter_context(served(create_app(Settings(database_url=db.url, **FAST_WATCH), db)))


def test_with_no_manager_the_service_fires_one_no_leader_alert_delivered_and_resolved_by_the_first_leader(
        db, receiver, start_manager, watching_service):
    _webhook(db, receiver.url)
    watching_service()
    _wait("a no_leader alert delivered by the service", lambda: _received(receiver, "firing"))
    [firing] = _received(receiver, "firing")
    assert verify(SECRET, firing.signature, firing.body)
    assert firing.document["severity"] == "critical" and firing.document["subject"] == "lease:manager"
    assert "no manager leads" in firing.document["message"]
    _wait("the alert counted at later looks", lambda: _no_leader_alerts(db)[0].count >= 3)
    [alert] = _no_leader_alerts(db)  # one open alert, however many looks saw it
    assert alert.resolved_at is None

    # The manager runs as a thread of this process, beside the service: on CI's loaded machine (four lanes on 2
    # cores) its renewals were once held up past a 4 s lease, and the alert fired again. Its lease is longer
    # there; the service's watch counts the vacancy from the lease row, whatever lease the holder took.
    lease = FAST_WATCH["manager_lease_seconds"] * TIMEOUT_SCALE
    start_manager(**{**FAST_WATCH, "manager_lease_seconds": lease})
    _wait("the resolution delivered", lambda: _received(receiver, "resolved"))
    [resolved] = _no_leader_alerts(db)
    assert resolved.id == alert.id and resolved.resolved_at is not None
    time.sleep(2 * (lease + FAST_WATCH["manager_heartbeat_seconds"]))
    assert [a.id for a in _no_leader_alerts(db)] == [alert.id]  # a leading manager: not fired again
    assert len(_received(receiver, "firing")) == 1 and len(_received(receiver, "resolved")) == 1


def test_managers_all_stopped_fire_no_leader_and_one_resumed_resolves_it(db, receiver, tmp_path, watching_service):
    _webhook(db, receiver.url)
    group = ManagerProcesses(db, tmp_path)  # a lease of 4 s, a heartbeat of 1 s, as the service's settings
    try:
        group.start()
        group.start()
        holder, epoch, pid = group.wait_for_leader()
        watching_service()
        group.procs[pid].send_signal(signal.SIGKILL)  # a failover as designed: not a leaderless deployment
        group.wait_for_leader(other_than=holder)
        time.sleep(2)
        assert _no_leader_alerts(db) == []
        [pid_alive] = [p for p, proc in group.procs.items() if proc.poll() is None]
        group.procs[pid_alive].send_signal(signal.SIGSTOP)  # every manager left is stuck
        _wait("no_leader delivered while every manager is stopped", lambda: _received(receiver, "firing"))
        assert group.lease()[2] is False  # no live lease indeed
        [firing] = _received(receiver, "firing")
        [alert] = _no_leader_alerts(db)
        group.procs[pid_alive].send_signal(signal.SIGCONT)
        _wait("the resolution delivered once a manager leads again", lambda: _received(receiver, "resolved"))
        assert group.wait_for_leader()[1] > epoch
        assert _received(receiver, "resolved")[0].document["alert_id"] == firing.document["alert_id"] == alert.id
        with db.transaction() as session:  # one alert at a time: the unique index of open alerts
            assert session.scalar(select(func.count()).select_from(Alert).where(
                Alert.kind == "no_leader", Alert.resolved_at.is_(None))) <= 1
    finally:
        group.stop_all()


def test_a_watch_counts_the_vacancy_from_its_own_start_and_resolves_only_for_a_live_leader(db):
    settings = Settings(database_url=db.url, manager_lease_seconds=0.5, manager_heartbeat_seconds=0.2)
    with db.transaction() as session:  # the last leader stopped an hour ago, with the whole deployment
        session.execute(insert(Lease).values(name="manager", holder="gone", epoch=7,
                                             expires_at=func.now() - timedelta(hours=1)))
    watch = LeaderWatch(db, settings)
    assert watch.check() is False  # just started: the managers get their lease and heartbeat first
    time.sleep(1)
    assert watch.check() is True
    assert LeaderWatch(db, settings).check() is False  # a newcomer vouches for nothing yet, and resolves nothing
    assert watch.check() is True
    [alert] = _no_leader_alerts(db)
    assert alert.count == 2 and alert.details["last_leader"] == "gone" and alert.details["vacant_seconds"] >= 3600
    assert LeaderLease(db, "new", lease_seconds=30, heartbeat_seconds=10).try_acquire() == 8
    assert watch.check() is False
    [resolved] = _no_leader_alerts(db)
    assert resolved.resolved_at is not None
