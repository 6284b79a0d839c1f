"""`/api/v1/tables/{id}/savepoints` and `POST /api/v1/tables/{id}/restore` with a savepoint: an operator savepoints
a table written by Spark, an admin restores it in place; the restore plan is on the timeline and its task
recorded; run as a worker runs it, the table reads as it did at the savepoint."""
from __future__ import annotations

import secrets
import shutil

from support import hudi_rs_table, rows

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action


def test_savepoint_then_restore_in_place(client, tokens, hudi_tables):
    source = hudi_tables["cow_v8_nonpartitioned"]
    path = source.parent / f"cow_v8_nonpartitioned-savepoint-{secrets.token_hex(4)}"
    shutil.copytree(source, path)
    table = client.post("/api/v1/tables", json={"base_path": str(path)}, headers=tokens["admin"]).json()
    url = f"/api/v1/tables/{table['id']}"
    writes = HudiTable.load(str(path)).timeline.completed_writes()
    assert len(writes) >= 2
    kept = writes[0].timestamp
    expected = rows(hudi_rs_table(path, as_of=kept))
    assert expected != rows(hudi_rs_table(path))

    assert client.get(f"{url}/savepoints", headers=tokens["viewer"]).json() == []
    assert client.post(f"{url}/savepoints", json={}, headers=tokens["viewer"]).status_code == 403
    made = client.post(f"{url}/savepoints", json={"instant": kept, "comment": "before the backfill"},
                       headers=tokens["operator"])
    assert made.status_code == 201, made.text
    assert made.json()["instant"] == kept and made.json()["files"] >= 1
    again = client.post(f"{url}/savepoints", json={"instant": kept}, headers=tokens["operator"])
    assert again.status_code == 422 and "already has a savepoint" in again.json()["detail"]
    listed = client.get(f"{url}/savepoints", headers=tokens["viewer"]).json()
    assert [(s["instant"], s["comments"]) for s in listed] == [(kept, "before the backfill")]

    body = {"savepoint": kept, "in_place": True}
    assert client.post(f"{url}/restore", json=body, headers=tokens["operator"]).status_code == 403
    for wrong, says in (({"savepoint": kept, "version": 1, "in_place": True}, "exactly one of version"),
                        ({"savepoint": kept}, "exactly one of target_path"),
                        ({"version": 1, "in_place": True}, "backup version"),
                        ({"savepoint": kept, "target_path": str(path)}, "is the table itself"),
                        ({"savepoint": writes[-1].timestamp, "in_place": True}, "no savepoint")):
        refused = client.post(f"{url}/restore", json=wrong, headers=tokens["admin"])
        assert refused.status_code == 422 and says in refused.text, refused.text
    assert not HudiTable.load(str(path)).timeline.pending()  # the refusals wrote nothing
    response = client.post(f"{url}/restore", json=body, headers=tokens["admin"])
    assert response.status_code == 202, response.text
    task = response.json()
    assert (task["action"], task["state"], task["target_instant"]) == ("restore", "RUNNABLE", kept)
    timeline = HudiTable.load(str(path)).timeline
    assert timeline.get(task["instant"]).action == Action.RESTORE and timeline.get(task["instant"]).is_requested

    execute_instant(HudiTable.load(str(path)), task["instant"], LocalRunner(), service="restore")  # as a worker
    assert rows(hudi_rs_table(path)) == expected
    assert HudiTable.load(str(path)).timeline.get(task["instant"]).is_completed
    gone = client.delete(f"{url}/savepoints/{kept}", headers=tokens["operator"])
    assert gone.status_code == 204 and client.get(f"{url}/savepoints", headers=tokens["viewer"]).json() == []


def test_a_restore_is_not_planned(client, tokens, register):
    table = register("cow_v8_nonpartitioned")
    refused = client.post(f"/api/v1/tables/{table['id']}:plan", json={"service": "restore"},
                          headers=tokens["operator"])
    assert refused.status_code == 422 and "POST /api/v1/tables/{id}/restore" in refused.text


def test_a_backfill_announced_savepoints_the_latest_write_until_it_ends(client, tokens, hudi_tables):
    source = hudi_tables["cow_v8_nonpartitioned"]
    path = source.parent / f"cow_v8_nonpartitioned-backfill-{secrets.token_hex(4)}"
    shutil.copytree(source, path)
    table = client.post("/api/v1/tables", json={"base_path": str(path)}, headers=tokens["admin"]).json()
    url = f"/api/v1/tables/{table['id']}"
    latest = HudiTable.load(str(path)).timeline.completed_writes()[-1].timestamp

    assert client.post(f"{url}/backfills", headers=tokens["viewer"]).status_code == 403
    made = client.post(f"{url}/backfills", json={"reason": "reload of March"}, headers=tokens["operator"])
    assert made.status_code == 201, made.text
    savepoint = made.json()["savepoint"]
    assert made.json()["created"] is True
    assert (savepoint["instant"], savepoint["savepointed_by"], savepoint["comments"]) == (
        latest, "tms-backfill", "backfill: reload of March")
    assert HudiTable.load(str(path)).timeline.savepoints()[0].timestamp == latest  # Hudi's savepoint, on storage
    again = client.post(f"{url}/backfills", headers=tokens["operator"])  # no body: no reason
    assert again.status_code == 201 and again.json()["created"] is False
    assert again.json()["savepoint"]["instant"] == latest

    assert client.delete(f"{url}/backfills/{latest}", headers=tokens["operator"]).status_code == 204
    assert client.get(f"{url}/savepoints", headers=tokens["viewer"]).json() == []
    client.post(f"{url}/savepoints", json={}, headers=tokens["operator"]).raise_for_status()
    not_a_backfill = client.delete(f"{url}/backfills/{latest}", headers=tokens["operator"])
    assert not_a_backfill.status_code == 422 and "not by a backfill" in not_a_backfill.json()["detail"]
    assert [s["instant"] for s in client.get(f"{url}/savepoints", headers=tokens["viewer"]).json()] == [latest]
