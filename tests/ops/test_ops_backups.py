"""`tms backups policy|list|take|restore` and `tms backfill start|end` against a live service: what each prints,
with `--json` too, and each refusal as one line. The backup task is run as its job runs it (no worker here)."""
from __future__ import annotations

import json
import os

from sqlalchemy import text
from test_ops_cli import as_json, ok, one_line_error

from standalone.demo import run_demo_writer
from tms.backup.job import run_backup_task
from tms.db import TaskRepo
from tms.execute.fencing import no_fence
from tms.hudi.table.hudi_table import HudiTable


def _table(tms, service) -> tuple[str, str]:
    path = service.storage_root / f"lake_{os.getpid()}_{len(list(service.storage_root.iterdir()))}"
    run_demo_writer(str(path), commits=2, interval=0, seed=3, echo=lambda line: None)
    registered = as_json(tms("tables", "register", str(path), "--json"))
    return str(registered["id"]), str(path)


def test_backups_commands(tms, service):
    table, path = _table(tms, service)
    destination = service.storage_root / "backups"
    assert "no backup policy" in one_line_error(tms("backups", "take", table))
    assert "outside the storage and backup roots" in one_line_error(
        tms("backups", "policy", table, "--destination", "/elsewhere"))
    set_line = ok(tms("backups", "policy", table, "--destination", str(destination), "--schedule", "0 3 * * *",
                      "--keep", "2"))
    name = as_json(tms("tables", "show", table, "--json"))["name"]
    assert set_line.strip() == f"table {table}: backups 0 3 * * * to {destination}/{name}-{table}, 2 kept"
    assert "admin" in one_line_error(tms("backups", "policy", table, "--destination", str(destination),
                                         role="operator"))

    taken = ok(tms("backups", "take", table, role="operator"))
    assert taken.startswith("backup requested: task ") and "backup " in taken and "RUNNABLE" in taken
    listed = ok(tms("backups", "list", table))
    assert "no backup version" in listed and "in progress: task" in listed
    assert "in progress" in one_line_error(tms("backups", "take", table))  # one backup task at a time

    with service.database.transaction() as session:  # the worker's part: run the job, record its end
        [task] = [t for t in TaskRepo(session).find(table_id=int(table))[0] if t.service == "backup"]
        session.execute(text("UPDATE tasks SET state = 'SUCCEEDED' WHERE id = :id"), {"id": task.id})
    record, _ = run_backup_task("backup", path, task.payload.body, no_fence)
    [version] = as_json(tms("backups", "list", table, "--json"))["items"]
    assert (version["version"], version["instant"]) == (1, record["instant"])
    [header, row] = ok(tms("backups", "list", table)).splitlines()[1:3]
    assert header.split()[:3] == ["VERSION", "INSTANT", "STATE"]
    assert row.split()[:3] == ["1", record["instant"], "complete"]

    target = service.storage_root / "restored"
    asked = tms("backups", "restore", table, "--version", "1", "--target-path", str(target), input="n\n")
    assert "nothing restored" in asked.output and not target.exists()
    restored = ok(tms("backups", "restore", table, "--version", "1", "--target-path", str(target), "--yes"))
    assert restored.startswith("restore requested: task ") and "backup_restore" in restored
    assert "admin" in one_line_error(tms("backups", "restore", table, "--version", "1", "--target-path",
                                         str(target) + "-x", "--yes", role="operator"))
    assert "no backup version 7" in one_line_error(
        tms("backups", "restore", table, "--version", "7", "--target-path", str(target) + "-x", "--yes"))
    assert "no savepoint at" in one_line_error(
        tms("backups", "restore", table, "--savepoint", "20200101000000000", "--target-path", str(target) + "-y",
            "--yes"))


def test_backfill_commands(tms, service):
    table, path = _table(tms, service)
    latest = HudiTable.load(path).timeline.completed_writes()[-1].timestamp
    started = ok(tms("backfill", "start", table, "--reason", "March again", role="operator"))
    assert started.startswith(f"table {table}: {latest} savepointed;") and f"backfill end {table} {latest}" in started
    again = as_json(tms("backfill", "start", table, "--json", role="operator"))
    assert (again["created"], again["savepoint"]["instant"], again["savepoint"]["comments"]) == (
        False, latest, "backfill: March again")
    assert "operator" in one_line_error(tms("backfill", "start", table, role="viewer"))
    assert ok(tms("backfill", "end", table, latest, role="operator")).strip() == \
        f"table {table}: backfill savepoint {latest} deleted"
    assert f"no savepoint at {latest}" in one_line_error(tms("backfill", "end", table, latest))
    assert json.loads(ok(tms("tables", "show", table, "--json")))["id"] == int(table)
