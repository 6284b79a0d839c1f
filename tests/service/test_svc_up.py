"""`tms up` (the README's run command): the service starts, the demo table is registered, and the demo
writer's commits reach the service as Hudi callbacks that are stored as events."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from tms.db import Database
from tms.db.models import Event, RegisteredTable
from tms.hudi.table.hudi_table import HudiTable

# Not imported from conftest: with several test folders in one run, `conftest` names another folder's.
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.beside
def test_tms_up_registers_the_demo_table_and_stores_its_callbacks(client, database_url, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env["TMS_DATABASE_URL"] = database_url
    out = subprocess.run([sys.executable, "-m", "tms.cli", "up", "--data-dir", str(tmp_path), "--port",
                          str(free_port()), "--commits", "3", "--interval", "0.2"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "TMS is up" in out.stdout
    table = HudiTable.load(str(tmp_path / "tables" / "trips"))
    # The writer's delta commits (the planner and the worker may have compacted the table meanwhile).
    commits = [i.timestamp for i in table.timeline.completed_writes() if i.action == "deltacommit"]
    assert len(commits) == 3
    database = Database(database_url)
    try:
        with database.transaction() as session:
            [registered] = session.scalars(select(RegisteredTable)).all()
            events = session.scalars(select(Event).where(Event.table_id == registered.id)).all()
    finally:
        database.dispose()
    assert registered.base_path.endswith("tables/trips")
    # The demo table asks for clustering in its own policy: `tms up` clusters no other table by default.
    assert registered.policies["hoodie.clustering.async.enabled"] is True
    assert sorted(e.instant for e in events) == commits
    assert {(e.action, e.state, e.source) for e in events} == {("deltacommit", "completed", "hudi_callback")}
