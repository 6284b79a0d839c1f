"""The supervisor of `tms up`'s roles: a role that exits on its first start stops `tms up` at once with the
error line of its log; one that exits later is restarted with a backoff, until it has exited too often."""
from __future__ import annotations

import time

import pytest

from standalone.supervisor import MAX_EXITS, START_SECONDS, RoleFailed, RoleFailedOnStart, Supervisor, error_line


def test_the_error_line_is_the_last_that_says_what_went_wrong():
    assert error_line(["INFO: Started server process [1]",
                       "ERROR: [Errno 98] error while attempting to bind on address: address already in use",
                       "INFO: Waiting for application shutdown."]) == \
        "ERROR: [Errno 98] error while attempting to bind on address: address already in use"
    assert error_line(["starting", "stopped"]) == "stopped"
    assert error_line([]) is None


def test_a_role_that_exits_on_start_fails_at_once_with_its_error(tmp_path):
    (tmp_path / "no-such-role.log").write_text("an earlier run's error: not this one\n")
    said: list[str] = []
    supervisor = Supervisor(["no-such-role"], {}, tmp_path, said.append)
    started = time.monotonic()
    supervisor.start()
    with pytest.raises(RoleFailedOnStart) as failed:
        while time.monotonic() - started < START_SECONDS:
            supervisor.check()
            time.sleep(0.1)
    message = str(failed.value)
    assert message.startswith("the no-such-role role exited on start (status 2): "), message
    assert "No such command 'no-such-role'" in message, message  # the role's own error, from its log
    assert "earlier run" not in message and all("earlier run" not in line for line in failed.value.tail)
    assert said == [], "no restart"


def test_a_role_that_exits_after_its_start_is_restarted_until_it_exits_too_often(tmp_path):
    now = [0.0]
    said: list[str] = []
    supervisor = Supervisor(["no-such-role"], {}, tmp_path, said.append, clock=lambda: now[0])
    supervisor.start()
    [role] = supervisor.roles
    now[0] = START_SECONDS + 1  # its first exit comes after its start
    with pytest.raises(RoleFailed) as failed:
        for _ in range(2 * MAX_EXITS):
            assert role.wait(120)
            supervisor.check()  # its exit: a restart scheduled
            now[0] += 35  # past the backoff (1, 2, 4 s), within the window of exits (300 s)
            supervisor.check()  # restarted
    assert not isinstance(failed.value, RoleFailedOnStart)
    assert str(failed.value).startswith(f"the no-such-role role exited {MAX_EXITS} times in a row (last status 2)")
    assert said[0].startswith("the no-such-role role exited with status 2; restarting it in 1 s (its log says: ")
    assert said[1].startswith("the no-such-role role exited with status 2; restarting it in 2 s")
    assert len(said) == MAX_EXITS - 1
