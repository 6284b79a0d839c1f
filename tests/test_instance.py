"""The role loop every TMS process runs (tms.instance.RoleLoop): a turn at each wake-up, the process's row
recorded with the role's facts at each heartbeat, a failing turn or heartbeat logged and outlived, and on stop
the role's own finish before its row is removed."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tms.db import Database, InstanceRepo
from tms.instance import RoleLoop

LONG = 3600.0  # an interval no test waits out: what happens sooner is the loop's doing


class CountingRole:
    """Counts its turns; the first `failing_turns` turns and the first `failing_facts` heartbeats raise."""

    def __init__(self, failing_turns: int = 0, failing_facts: int = 0):
        self.turns = 0
        self.facts_asked = 0
        self.failing_turns = failing_turns
        self.failing_facts = failing_facts
        self.turned = threading.Event()
        self.on_turn: Callable[[], None] = lambda: None

    def turn(self) -> None:
        self.turns += 1
        self.on_turn()
        self.turned.set()
        if self.turns <= self.failing_turns:
            raise RuntimeError("injected turn failure")

    def facts(self) -> dict[str, int]:
        self.facts_asked += 1
        if self.facts_asked <= self.failing_facts:
            raise RuntimeError("injected heartbeat failure")
        return {"turns": self.turns}


def _row_info(db: Database, instance_id: str) -> dict | None:
    with db.transaction() as session:
        return next((dict(i.info) for i in InstanceRepo(session).list() if i.id == instance_id), None)


def _wait_for(condition: Callable[[], object], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.01)


@contextmanager
def running(loop: RoleLoop, role: CountingRole, finish: Callable[[], None] | None = None) -> Iterator[None]:
    thread = threading.Thread(target=loop.run, args=(role,), kwargs={"finish": finish}, daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.stop()
        thread.join(timeout=20)
    assert not thread.is_alive(), "stop() ends the loop"


def test_a_turn_beats_wakes_on_request_and_stop_finishes_then_deregisters(db):
    loop = RoleLoop(db, ["planner"], heartbeat_seconds=LONG, poll_seconds=LONG)
    role = CountingRole()
    row_at_finish = []
    with running(loop, role, finish=lambda: row_at_finish.append(_row_info(db, loop.id))):
        _wait_for(lambda: _row_info(db, loop.id) == {"turns": 1})  # the first heartbeat follows the first turn
        role.turned.clear()
        loop.wake()
        assert role.turned.wait(20), "wake() brings a turn before the poll interval"
        assert role.turns == 2
        assert _row_info(db, loop.id) == {"turns": 1}, "a turn between heartbeats does not beat"
    assert row_at_finish == [{"turns": 1}], "the role finishes while its row is still there"
    assert _row_info(db, loop.id) is None, "a clean stop removes the row"


def test_a_failing_turn_is_logged_and_the_loop_goes_on(db, caplog):
    loop = RoleLoop(db, ["worker"], heartbeat_seconds=LONG, poll_seconds=0.01)
    role = CountingRole(failing_turns=2)
    with running(loop, role):
        _wait_for(lambda: role.turns >= 4)
        assert _row_info(db, loop.id) == {"turns": 1}, "the turn's failure does not keep the heartbeat from it"
    assert f"worker {loop.id}: turn failed" in caplog.text and "injected turn failure" in caplog.text
    assert _row_info(db, loop.id) is None


def test_a_due_heartbeat_wakes_the_loop_and_a_failed_one_is_tried_at_the_next(db, caplog):
    loop = RoleLoop(db, ["manager"], heartbeat_seconds=0.05, poll_seconds=LONG)
    role = CountingRole(failing_facts=1)
    with running(loop, role):
        _wait_for(lambda: (_row_info(db, loop.id) or {}).get("turns", 0) >= 3)  # fresh facts at each heartbeat
    assert f"manager {loop.id}: heartbeat failed: injected heartbeat failure" in caplog.text
    assert _row_info(db, loop.id) is None


def test_beat_within_brings_the_next_heartbeat_and_its_turn_forward(db):
    loop = RoleLoop(db, ["manager"], heartbeat_seconds=LONG, poll_seconds=LONG)
    role = CountingRole()
    beating = []

    def turn() -> None:
        beating.append(loop.beating)
        if role.turns == 1:  # as a standby manager does when the leader's lease is about to end
            loop.beat_within(0.01)

    role.on_turn = turn
    with running(loop, role):
        _wait_for(lambda: _row_info(db, loop.id) == {"turns": 2})
    assert beating[:2] == [True, True], "both turns carry a heartbeat"


def test_a_loop_stopped_before_it_runs_takes_no_turn_and_leaves_no_row(db):
    loop = RoleLoop(db, ["worker"], heartbeat_seconds=LONG)
    role = CountingRole()
    finished = []
    loop.stop()
    loop.run(role, finish=lambda: finished.append(True))
    assert role.turns == 0 and finished == [True] and _row_info(db, loop.id) is None
