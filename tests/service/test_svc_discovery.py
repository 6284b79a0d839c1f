"""Discovery (POST /api/v1/discovery/scan): a storage root with tables of mixed kinds at several depths is
scanned; each table TMS can serve is registered with the scan's policies, one it cannot read is listed refused
with the reason, hidden folders are skipped; a rescan registers nothing twice and lists no known table again;
a table gone from storage is disabled (not deleted) with an alert."""
from __future__ import annotations

import shutil
import uuid

import pytest

from tms.db import AlertRepo, TableRepo
from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "city": "sf" if i % 2 else "la", "v": f"r{i}"} for i in range(6)]
KINDS = {  # relative path -> (table type, version, partition fields)
    "db1/trips_mor6": ("MERGE_ON_READ", 6, ["city"]),
    "db1/trips_cow8": ("COPY_ON_WRITE", 8, []),
    "db2/deep/events_mor8": ("MERGE_ON_READ", 8, ["city"]),
    "flat_cow6": ("COPY_ON_WRITE", 6, ["city"]),
}


@pytest.fixture
def root(settings):
    path = (settings.storage_roots[0].rstrip("/") + f"/discovery-{uuid.uuid4().hex[:8]}")
    for rel, (table_type, version, partition) in KINDS.items():
        writer = create_table_for_records(f"{path}/{rel}", ROWS, table_type=table_type, version=version,
                                          key=["id"], ordering=["ts"], partition=partition)
        writer.write(ROWS, "insert")
    # A folder that looks like a table but that TMS cannot read (a table version it does not serve).
    old = f"{path}/db2/ancient"
    shutil.os.makedirs(f"{old}/.hoodie")
    with open(f"{old}/.hoodie/hoodie.properties", "w") as fh:
        fh.write("hoodie.table.name=ancient\nhoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=2\n")
    # Hidden folders are not looked into (Hudi's own, trash, temporary output).
    create_table_for_records(f"{path}/.trash/deleted", ROWS, table_type="COPY_ON_WRITE", version=8, key=["id"],
                             ordering=["ts"], partition=[])
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _scan(client, tokens, root, **body):
    response = client.post("/api/v1/discovery/scan", json={"root": root, **body}, headers=tokens["admin"])
    assert response.status_code == 200, response.text
    [scan] = response.json()["scans"]
    return scan


def test_a_scan_registers_what_tms_serves_and_lists_what_it_refuses(client, tokens, root, app):
    scan = _scan(client, tokens, root, policies={"hoodie.compact.inline.max.delta.commits": 3})
    assert sorted(r["base_path"] for r in scan["registered"]) == sorted(f"{root}/{rel}" for rel in KINDS)
    [refused] = scan["refused"]
    assert refused["base_path"] == f"{root}/db2/ancient" and "version" in refused["reason"]
    assert scan["missing"] == [] and scan["known"] == 0
    tables = client.get("/api/v1/tables", params={"limit": 100}, headers=tokens["viewer"]).json()["items"]
    by_path = {t["base_path"]: t for t in tables}
    assert set(by_path) == {f"{root}/{rel}" for rel in KINDS}, "the hidden folder's table is not registered"
    for rel, (table_type, version, _) in KINDS.items():
        t = by_path[f"{root}/{rel}"]
        assert (t["table_type"], t["table_version"]) == (table_type, version)
        assert t["policies"]["hoodie.compact.inline.max.delta.commits"] == 3
    listed = client.get("/api/v1/discovery/tables", params={"state": "refused"}, headers=tokens["viewer"]).json()
    assert [(d["base_path"], d["reason"]) for d in listed["items"]] == [(refused["base_path"], refused["reason"])]

    again = _scan(client, tokens, root)
    assert again["registered"] == [] and again["known"] == len(KINDS)
    assert [r["base_path"] for r in again["refused"]] == [refused["base_path"]]
    assert again["listings"] < scan["listings"], "known tables are not listed again"

    gone = f"{root}/db1/trips_cow8"
    shutil.rmtree(gone)
    third = _scan(client, tokens, root)
    [missing] = third["missing"]
    assert missing["base_path"] == gone
    with app.state.database.transaction() as session:
        table = TableRepo(session).get(missing["id"])  # still there: disabled, not deleted
        assert table.enabled is False
        alerts, _ = AlertRepo(session).find(kind="table_missing")
        assert [a.table_id for a in alerts] == [missing["id"]]


def test_a_scan_is_an_admins_and_stays_under_the_storage_roots(client, tokens, root):
    response = client.post("/api/v1/discovery/scan", json={"root": root}, headers=tokens["operator"])
    assert response.status_code == 403
    outside = client.post("/api/v1/discovery/scan", json={"root": "/somewhere/else"}, headers=tokens["admin"])
    assert outside.status_code == 422 and "outside the storage roots" in outside.text
    bad = client.post("/api/v1/discovery/scan", json={"root": root, "policies": {"hoodie.clean.commits.retained": -1}},
                      headers=tokens["admin"])
    assert bad.status_code == 422
    assert client.get("/api/v1/tables", headers=tokens["viewer"]).json()["total"] == 0, "nothing was registered"


def test_a_callback_from_an_unregistered_table_registers_it_when_the_rule_admits(client, settings, root, app):
    """TMS_DISCOVERY_ADMIT_CALLBACKS: a callback with the service-wide key from a table under a storage root
    registers it and is stored; one from a table TMS cannot serve is refused as before (404), recorded as
    refused with the reason; a table's own key (not trusted for every table) registers nothing."""
    from fastapi.testclient import TestClient
    from test_svc_callback import hudi_message

    from service.app import create_app
    from tms.db import DiscoveryRepo, EventRepo

    callback_key = settings.callback_key.get_secret_value()
    admitting = create_app(settings.model_copy(update={"discovery_admit_callbacks": True}), app.state.database)
    new_table = f"{root}/db1/trips_mor6"
    with TestClient(admitting) as admitting_client:
        untrusted = admitting_client.post("/api/v1/hudi/callback", json=hudi_message(new_table, "20260101000000000"),
                                          headers={"HUDI-CALLBACK-KEY": "some-tables-own-key"})
        assert untrusted.status_code == 401
        accepted = admitting_client.post("/api/v1/hudi/callback", json=hudi_message(new_table, "20260101000000000"),
                                         headers={"HUDI-CALLBACK-KEY": callback_key})
        assert accepted.status_code == 202, accepted.text
        refused = admitting_client.post("/api/v1/hudi/callback",
                                        json=hudi_message(f"{root}/db2/ancient", "20260101000000000"),
                                        headers={"HUDI-CALLBACK-KEY": callback_key})
        assert refused.status_code == 404
    with app.state.database.transaction() as session:
        table = TableRepo(session).by_base_path(new_table)
        assert table is not None and table.table_type == "MERGE_ON_READ"
        assert [e.instant for e in EventRepo(session).unprocessed(table.id)] == ["20260101000000000"]
        refusals, _ = DiscoveryRepo(session).list(state="refused")
        assert [d.base_path for d in refusals] == [f"{root}/db2/ancient"] and "version" in refusals[0].reason
    # Without the rule (the service's default), the same callback is refused.
    other = f"{root}/flat_cow6"
    assert client.post("/api/v1/hudi/callback", json=hudi_message(other, "20260101000000000"),
                       headers={"HUDI-CALLBACK-KEY": callback_key}).status_code == 404
