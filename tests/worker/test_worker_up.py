"""`tms up` (the README's run command) on a fresh data directory: the demo writer's commits turn into
compactions that the worker runs on local Spark and that complete, and `tms up` prints them."""
import os
import re
import socket
import subprocess
import sys

import pytest
from sqlalchemy import select
from support import REPO, hudi_rs_table, rows

from tms.db import Database
from tms.db.models import Task
from tms.db.testing import scratch_database
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.waiting
@pytest.mark.beside
def test_tms_up_shows_commits_turning_into_compactions_that_complete(tmp_path):
    with scratch_database() as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
        env["TMS_DATABASE_URL"] = url
        out = subprocess.run([sys.executable, "-m", "tms.cli", "up", "--data-dir", str(tmp_path), "--port",
                              str(_free_port()), "--commits", "3", "--interval", "0.5"],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
        assert out.returncode == 0, out.stdout + out.stderr
        database = Database(url)
        try:
            with database.transaction() as session:
                tasks = session.scalars(select(Task).where(Task.service == "compaction")).all()
        finally:
            database.dispose()

    assert re.search(r"task \d+ \(table trips\): compaction \d{17} RUNNING on queue local", out.stdout), out.stdout
    assert re.search(r"task \d+ \(table trips\): compaction \d{17} SUCCEEDED in (\d+ ms|\d+ s|\d+m \d\ds)$",
                     out.stdout, re.M), out.stdout
    assert tasks and all(t.state == "SUCCEEDED" for t in tasks), [(t.state, t.error) for t in tasks]
    path = tmp_path / "tables" / "trips"
    table = HudiTable.load(str(path))
    compacted = [i for i in table.timeline.completed([Action.COMMIT]) if i.timestamp in {t.instant for t in tasks}]
    assert len(compacted) == len(tasks)
    assert rows(hudi_rs_table(path)) == rows(read_snapshot(table))
