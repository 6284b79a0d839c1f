"""Backups run as tasks: the schedule (the manager's, two simulated days) requests a backup and a
backup-clean each day, workers run them as jobs (lease, fence), the API lists the versions kept and restores
one to a new path, which reads (hudi-rs) as the table at that version; the backup alerts fire and resolve."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text
from support import hudi_rs_table, rows
from table_model import COLUMNS
from worker_support import ModelledTable, rec, register, wait_until_final

from manager.backups import schedule_backups
from manager.monitor import MonitorContext, backup_failed, backup_missed
from tms.config import Settings
from tms.db import TaskState
from tms.db.read_models import MonitorReads
from tms.leadership import LeaderLease
from tms.table_service import TableService


def _run_due(db, lease, epoch, now) -> list[tuple[str, str]]:
    """Every backup task the schedule asks for at `now`, each run by the worker to its end."""
    done: list[tuple[str, str]] = []
    for _ in range(4):  # a schedule that keeps asking is a failure, not a loop
        [*tasks] = schedule_backups(lease, epoch, now)
        if not tasks:
            return done
        for task in tasks:
            final = wait_until_final(db, task.id, timeout=120)
            done.append((final.service, final.state))
    raise AssertionError(f"the schedule kept asking for backup tasks at {now}: {done}")


@pytest.mark.slow
def test_daily_scheduled_backups_keep_one_version_and_restore_it(tmp_path, service, db, local_queue,
                                                                          start_worker):
    local_queue()
    table = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    table_id = register(service, table.path)
    put = httpx.put(f"{service.url}/api/v1/tables/{table_id}/backup", headers=service.admin,
                    json={"destination": str(tmp_path / "backups"), "keep_versions": 1})
    assert put.status_code == 200, put.text
    assert put.json()["root"] == f"{tmp_path / 'backups'}/t-{table_id}"
    start_worker()
    lease = LeaderLease(db, "m", lease_seconds=600, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    # The schedule is daily at 00:00 UTC: the simulated days start at 01:00, so that "an hour later" is the same day
    # whatever the hour the test runs at.
    start = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0)
    instants = []
    for day in range(2):  # each job is a process of its own: the multi-day proofs are tests/backup's
        instant = table.write([rec(i, day) for i in range(day * 20, day * 20 + 20)])
        table.model.commit(instant)
        instants.append(instant)
        now = start + timedelta(days=day, minutes=5)
        assert _run_due(db, lease, epoch, now) == [("backup", "SUCCEEDED"), ("backup_clean", "SUCCEEDED")]
        assert _run_due(db, lease, epoch, now + timedelta(hours=1)) == []  # not due again the same day

    listed = httpx.get(f"{service.url}/api/v1/tables/{table_id}/backups", headers=service.admin).json()
    [kept] = listed["items"]  # version 1 expired by the second day's backup-clean
    assert (kept["version"], kept["instant"], kept["state"]) == (2, instants[1], "complete")
    assert 0 < kept["bytes_copied"] < kept["total_bytes"]  # the second day copied its own files, not the table
    assert [t["action"] for t in listed["tasks"]][:2] == ["backup_clean", "backup"]

    target = tmp_path / "restored"
    restore = httpx.post(f"{service.url}/api/v1/tables/{table_id}/restore", headers=service.admin,
                         json={"version": 2, "target_path": str(target)})
    assert restore.status_code == 202, restore.text
    assert restore.json()["action"] == "backup_restore"
    assert wait_until_final(db, restore.json()["id"], timeout=120).state == TaskState.SUCCEEDED
    assert rows(hudi_rs_table(target), COLUMNS) == table.model.expected(as_of=instants[1])
    assert table.model.expected(as_of=instants[1]) != table.model.expected(as_of=instants[0])

    again = httpx.post(f"{service.url}/api/v1/tables/{table_id}/restore", headers=service.admin,
                       json={"version": 2, "target_path": str(target)})
    assert again.status_code == 422 and "not empty" in again.json()["detail"]
    gone = httpx.post(f"{service.url}/api/v1/tables/{table_id}/restore", headers=service.admin,
                      json={"version": 1, "target_path": str(tmp_path / "other")})
    assert gone.status_code == 422 and "no backup version 1" in gone.json()["detail"]
    assert not (tmp_path / "other").exists()


def test_backup_requests_and_refusals_through_the_api(tmp_path, service, db, local_queue):
    table = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    table.write([rec(i, 1) for i in range(5)])
    table_id = register(service, table.path)
    url = f"{service.url}/api/v1/tables/{table_id}"
    assert httpx.get(f"{url}/backup", headers=service.admin).status_code == 404
    no_policy = httpx.post(f"{url}/backups", headers=service.admin)
    assert no_policy.status_code == 422 and "no backup policy" in no_policy.json()["detail"]
    bad_cron = httpx.put(f"{url}/backup", headers=service.admin,
                         json={"destination": str(tmp_path / "b"), "schedule": "every day"})
    assert bad_cron.status_code == 422 and "cron" in bad_cron.text
    assert httpx.put(f"{url}/backup", headers=service.admin,
                     json={"destination": str(tmp_path / "b"), "schedule": "30 2 * * *"}).status_code == 200
    assert httpx.get(f"{url}/backup", headers=service.admin).json()["schedule"] == "30 2 * * *"

    first = httpx.post(f"{url}/backups", headers=service.admin)
    assert first.status_code == 202 and first.json()["action"] == "backup" and first.json()["state"] == "RUNNABLE"
    busy = httpx.post(f"{url}/backups", headers=service.admin)  # one backup task at a time per table
    assert busy.status_code == 409 and "in progress" in busy.json()["detail"]

    savepoint = httpx.post(f"{url}/restore", headers=service.admin,
                           json={"savepoint": "20250101000000000", "target_path": str(tmp_path / "r")})
    assert savepoint.status_code == 422 and "no savepoint at 20250101000000000" in savepoint.json()["detail"]
    in_place = httpx.post(f"{url}/restore", headers=service.admin, json={"version": 1, "in_place": True})
    assert in_place.status_code == 422 and "new base path" in in_place.json()["detail"]
    catch_up = httpx.post(f"{url}/restore", headers=service.admin,
                          json={"savepoint": "20250101000000000", "target_path": str(tmp_path / "r"), "catch_up": True})
    assert catch_up.status_code == 422 and "catch_up applies to a backup version" in catch_up.text
    both = httpx.post(f"{url}/restore", headers=service.admin, json={"version": 1, "savepoint": "20250101000000000"})
    assert both.status_code == 422


@pytest.mark.slow
def test_backup_failed_and_backup_missed_fire_and_resolve(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    table = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    table.write([rec(i, 1) for i in range(5)])
    table_id = register(service, table.path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the destination's folder must be")
    httpx.put(f"{service.url}/api/v1/tables/{table_id}/backup", headers=service.admin,
              json={"destination": str(blocker), "schedule": "daily"}).raise_for_status()
    start_worker()
    lease = LeaderLease(db, "m", lease_seconds=600, heartbeat_seconds=10)
    epoch = lease.try_acquire()
    [task] = schedule_backups(lease, epoch, datetime.now(UTC))
    failed = wait_until_final(db, task.id, timeout=120)
    assert failed.state == TaskState.FAILED and failed.service == TableService.BACKUP
    with db.transaction() as session:  # its retries exhausted
        session.execute(text("UPDATE tasks SET next_attempt_at = NULL WHERE id = :id"), {"id": task.id})

    def sightings(rule, now):
        with db.transaction() as session:
            return rule(MonitorReads(session), MonitorContext(Settings(), now, {}))

    now = datetime.now(UTC)
    [(subject, sighting)] = sightings(backup_failed, now).items()
    assert subject == f"table:{table_id}" and sighting.severity == "critical" and "failed for good" in sighting.message
    # The next day's backup (00:00 UTC) is not done 3 hours (the default grace) later: missed.
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert sightings(backup_missed, tomorrow + timedelta(hours=2)) == {}
    [(subject, sighting)] = sightings(backup_missed, tomorrow + timedelta(hours=4)).items()
    assert subject == f"table:{table_id}" and "not done" in sighting.message

    httpx.put(f"{service.url}/api/v1/tables/{table_id}/backup", headers=service.admin,
              json={"destination": str(tmp_path / "backups"), "schedule": "daily"}).raise_for_status()
    [retry] = schedule_backups(lease, epoch, tomorrow + timedelta(hours=4))
    assert wait_until_final(db, retry.id, timeout=120).state == TaskState.SUCCEEDED
    assert sightings(backup_failed, tomorrow + timedelta(hours=4)) == {}
    assert sightings(backup_missed, tomorrow + timedelta(hours=4)) == {}


@pytest.mark.slow
def test_restores_to_a_new_path_of_a_savepoint_and_of_a_version_caught_up(tmp_path, service, db, local_queue,
                                                                          start_worker):
    local_queue()
    table = ModelledTable(tmp_path / "t", "MERGE_ON_READ", 6)
    first = table.write([rec(i, 1) for i in range(10)])
    table.model.commit(first)
    table_id = register(service, table.path)
    url = f"{service.url}/api/v1/tables/{table_id}"
    httpx.put(f"{url}/backup", headers=service.admin, json={"destination": str(tmp_path / "b")}).raise_for_status()
    start_worker()
    backup = httpx.post(f"{url}/backups", headers=service.admin).json()
    assert wait_until_final(db, backup["id"], timeout=120).state == TaskState.SUCCEEDED
    second = table.write([rec(i, 2, "second") for i in range(5, 15)])
    table.model.commit(second)
    httpx.post(f"{url}/savepoints", headers=service.admin, json={}).raise_for_status()  # of the second write
    table.model.commit(table.write([rec(i, 3, "third") for i in range(0, 20, 2)]))

    def restored(body: dict) -> None:
        response = httpx.post(f"{url}/restore", headers=service.admin, json=body)
        assert response.status_code == 202, response.text
        assert response.json()["action"] == "backup_restore"
        assert wait_until_final(db, response.json()["id"], timeout=120).state == TaskState.SUCCEEDED

    restored({"savepoint": second, "target_path": str(tmp_path / "at-savepoint")})
    assert rows(hudi_rs_table(tmp_path / "at-savepoint"), COLUMNS) == table.model.expected(as_of=second)
    restored({"version": 1, "target_path": str(tmp_path / "caught-up"), "catch_up": True})
    assert rows(hudi_rs_table(tmp_path / "caught-up"), COLUMNS) == table.model.expected()
    assert table.model.expected() not in (table.model.expected(as_of=second), table.model.expected(as_of=first))
