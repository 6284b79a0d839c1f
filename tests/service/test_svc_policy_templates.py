"""Policy templates (/api/v1/policy-templates): the most specific template matching a table gives it its
policies, queue, priority and lock options; the table's own settings override them; the table's API says
where each effective value comes from; putting or deleting a template re-resolves the registered tables, and
discovery registers new tables under them."""
from __future__ import annotations

import shutil
import uuid

import pytest

from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "v": f"r{i}"} for i in range(3)]
DELTAS = "hoodie.compact.inline.max.delta.commits"
RETAINED = "hoodie.cleaner.commits.retained"
LOCK = "hoodie.write.lock.provider"
FS_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"


@pytest.fixture
def lake(settings):
    path = settings.storage_roots[0].rstrip("/") + f"/templates-{uuid.uuid4().hex[:8]}"
    for rel in ("sales/orders_mor", "sales/trips_mor", "ops/trips_log"):
        create_table_for_records(f"{path}/{rel}", ROWS, table_type="MERGE_ON_READ", version=8, key=["id"],
                                 ordering=["ts"], partition=[]).write(ROWS, "insert")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _put(client, tokens, name, **body):
    response = client.put(f"/api/v1/policy-templates/{name}", json=body, headers=tokens["admin"])
    assert response.status_code == 200, response.text
    return response.json()


def _register(client, tokens, base_path, **fields):
    response = client.post("/api/v1/tables", json={"base_path": base_path, **fields}, headers=tokens["admin"])
    assert response.status_code == 201, response.text
    return response.json()


def _table(client, tokens, table_id):
    return client.get(f"/api/v1/tables/{table_id}", headers=tokens["viewer"]).json()


def test_the_most_specific_template_applies_and_the_tables_own_settings_override_it(client, tokens, lake):
    _put(client, tokens, "lake", path_prefix=lake, policies={DELTAS: 8, RETAINED: 20}, queue="bulk", priority=1)
    _put(client, tokens, "trips", path_prefix=lake, name_pattern="trips_*", policies={DELTAS: 2, LOCK: FS_LOCK})
    orders = _register(client, tokens, f"{lake}/sales/orders_mor")
    trips = _register(client, tokens, f"{lake}/sales/trips_mor", priority=9, policies={RETAINED: 5})

    assert orders["template"] == "lake"
    assert (orders["policies"][DELTAS], orders["policies"][RETAINED], orders["queue"], orders["priority"]) \
        == (8, 20, "bulk", 1)
    assert orders["sources"][DELTAS] == "template:lake" and orders["sources"]["queue"] == "template:lake"
    assert orders["sources"]["hoodie.cleaner.policy"] == "default"

    # The name pattern is more specific than the path prefix alone; the table's own priority and option win.
    assert trips["template"] == "trips"
    assert (trips["policies"][DELTAS], trips["policies"][RETAINED], trips["policies"][LOCK], trips["priority"]) \
        == (2, 5, FS_LOCK, 9)
    assert trips["sources"][DELTAS] == "template:trips" and trips["sources"][LOCK] == "template:trips"
    assert trips["sources"][RETAINED] == "table" and trips["sources"]["priority"] == "table"
    assert trips["queue"] is None and trips["sources"]["queue"] == "default"  # "trips" sets no queue

    # A template changed: its tables follow, except where they set their own.
    put = _put(client, tokens, "trips", path_prefix=lake, name_pattern="trips_*", policies={DELTAS: 3, RETAINED: 1})
    assert put["changed"] == 1 and put["tables"] == 1
    trips = _table(client, tokens, trips["id"])
    assert (trips["policies"][DELTAS], trips["policies"][RETAINED]) == (3, 5)
    assert LOCK not in trips["policies"], "the template's lock options went with it"

    # The table sets its own option, then removes it (null): back to the template's value.
    patched = client.patch(f"/api/v1/tables/{trips['id']}", json={"policies": {DELTAS: 11}}, headers=tokens["admin"])
    assert patched.json()["policies"][DELTAS] == 11 and patched.json()["sources"][DELTAS] == "table"
    patched = client.patch(f"/api/v1/tables/{trips['id']}", json={"policies": {DELTAS: None}},
                           headers=tokens["admin"])
    assert patched.json()["policies"][DELTAS] == 3 and patched.json()["sources"][DELTAS] == "template:trips"

    # Deleted: its table falls back to the next template that matches.
    assert client.delete("/api/v1/policy-templates/trips", headers=tokens["admin"]).status_code == 204
    trips = _table(client, tokens, trips["id"])
    assert trips["template"] == "lake" and trips["policies"][DELTAS] == 8 and trips["queue"] == "bulk"
    assert trips["priority"] == 9 and trips["policies"][RETAINED] == 5
    listed = client.get("/api/v1/policy-templates", headers=tokens["viewer"]).json()
    assert [(t["name"], t["tables"]) for t in listed] == [("lake", 2)]


def test_discovery_registers_new_tables_under_the_templates(client, tokens, lake):
    _put(client, tokens, "ops", path_prefix=f"{lake}/ops", policies={DELTAS: 4}, queue="ops")
    response = client.post("/api/v1/discovery/scan", json={"root": lake}, headers=tokens["admin"])
    assert response.status_code == 200, response.text
    tables = client.get("/api/v1/tables", params={"limit": 100}, headers=tokens["viewer"]).json()["items"]
    by_path = {t["base_path"]: t for t in tables}
    assert set(by_path) == {f"{lake}/{rel}" for rel in ("sales/orders_mor", "sales/trips_mor", "ops/trips_log")}
    ops = by_path[f"{lake}/ops/trips_log"]
    assert (ops["template"], ops["policies"][DELTAS], ops["queue"]) == ("ops", 4, "ops")
    sales = by_path[f"{lake}/sales/orders_mor"]
    assert sales["template"] is None and sales["sources"][DELTAS] == "default"


def test_templates_refuse_what_they_cannot_give_every_table_and_viewers_cannot_write(client, tokens):
    ttl = client.put("/api/v1/policy-templates/t", json={"policies": {"tms.ttl.field": "ts", "tms.ttl.days": 3}},
                     headers=tokens["admin"])
    assert ttl.status_code == 422 and "set on a table, not a template" in ttl.text
    bad = client.put("/api/v1/policy-templates/t", json={"policies": {DELTAS: 0}}, headers=tokens["admin"])
    assert bad.status_code == 422
    lock = client.put("/api/v1/policy-templates/t", json={"policies": {LOCK: "com.example.NoSuchLock"}},
                      headers=tokens["admin"])
    assert lock.status_code == 422
    for prefix in ("0", "relative/dir", "s3://"):  # not a folder a base path can lie under: refused, not a 500
        refused = client.put("/api/v1/policy-templates/t", json={"path_prefix": prefix}, headers=tokens["admin"])
        assert refused.status_code == 422 and "body.path_prefix" in refused.json()["detail"], (prefix, refused.text)
    assert client.put("/api/v1/policy-templates/t", json={}, headers=tokens["operator"]).status_code == 403
    assert client.get("/api/v1/policy-templates", headers=tokens["viewer"]).json() == []
    assert client.get("/api/v1/policy-templates/t", headers=tokens["viewer"]).status_code == 404
