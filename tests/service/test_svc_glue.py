"""A Glue catalog sync (POST /api/v1/discovery/glue-sync) against the `moto` server's Glue API on loopback: each
Hudi table of the Glue database is registered at its location with its policy template's settings (a
MERGE_ON_READ table listed three times, once), the other tables are listed refused with the reason, a second
sync registers nothing twice, and a table dropped from the catalog is disabled, not deleted."""
from __future__ import annotations

import shutil
import uuid

import pytest
from s3_endpoint import ACCESS_KEY, REGION, SECRET_KEY, S3Endpoint

from tms.db import TableRepo
from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "v": f"r{i}"} for i in range(3)]
HUDI_MOR_INPUT = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
HUDI_COW_INPUT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    endpoint = S3Endpoint.start(tmp_path_factory.mktemp("moto") / "moto.log")
    yield endpoint
    endpoint.stop()


@pytest.fixture
def catalog(glue, settings, app, monkeypatch):
    import boto3

    for key, value in {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                       "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(key, value)
    original = app.state.settings
    app.state.settings = original.model_copy(update={"glue_endpoint_url": glue.url, "glue_region": REGION})
    client = boto3.client("glue", endpoint_url=glue.url, region_name=REGION)
    database = f"sales_{uuid.uuid4().hex[:6]}"
    client.create_database(DatabaseInput={"Name": database})
    lake = settings.storage_roots[0].rstrip("/") + f"/glue-{database}"
    for name, kind in (("orders", "MERGE_ON_READ"), ("trips", "COPY_ON_WRITE")):
        create_table_for_records(f"{lake}/{name}", ROWS, table_type=kind, version=8, key=["id"], ordering=["ts"],
                                 partition=[]).write(ROWS, "insert")

    def table(name: str, location: str, input_format: str, provider: str | None = None) -> None:
        client.create_table(DatabaseName=database, TableInput={
            "Name": name, "StorageDescriptor": {"Location": location, "InputFormat": input_format},
            "Parameters": {"spark.sql.sources.provider": provider} if provider else {}})

    table("orders", f"{lake}/orders", HUDI_MOR_INPUT, "hudi")  # Hudi's sync of a MOR table: three entries
    table("orders_ro", f"{lake}/orders", HUDI_COW_INPUT)
    table("orders_rt", f"{lake}/orders", HUDI_MOR_INPUT)
    table("trips", f"{lake}/trips", HUDI_COW_INPUT)
    table("clicks", f"{lake}/clicks", "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat")
    table("outside", "/elsewhere/outside", HUDI_COW_INPUT)
    try:
        yield {"client": client, "database": database, "lake": lake}
    finally:
        app.state.settings = original
        shutil.rmtree(lake, ignore_errors=True)


def _sync(client, tokens, database, **body):
    response = client.post("/api/v1/discovery/glue-sync", json={"database": database, **body},
                           headers=tokens["admin"])
    assert response.status_code == 200, response.text
    return response.json()


def test_a_glue_database_is_synced_and_a_dropped_table_disabled(client, tokens, catalog, app):
    db, lake = catalog["database"], catalog["lake"]
    client.put("/api/v1/policy-templates/sales", json={"path_prefix": lake, "queue": "bulk",
                                                        "policies": {"hoodie.cleaner.commits.retained": 15}},
               headers=tokens["admin"])
    first = _sync(client, tokens, db)
    assert first["root"] == f"glue://{db}"
    assert sorted(r["base_path"] for r in first["registered"]) == [f"{lake}/orders", f"{lake}/trips"]
    refused = {r["base_path"]: r["reason"] for r in first["refused"]}
    assert refused[f"{lake}/clicks"] == (f"{db}.clicks is not a Hudi table (input format "
                                         "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat)")
    assert "outside the storage roots" in refused["/elsewhere/outside"] and len(refused) == 2
    tables = client.get("/api/v1/tables", params={"limit": 100}, headers=tokens["viewer"]).json()["items"]
    by_path = {t["base_path"]: t for t in tables}
    assert set(by_path) == {f"{lake}/orders", f"{lake}/trips"}
    orders = by_path[f"{lake}/orders"]
    assert (orders["table_type"], orders["template"], orders["queue"]) == ("MERGE_ON_READ", "sales", "bulk")
    assert orders["policies"]["hoodie.cleaner.commits.retained"] == 15

    again = _sync(client, tokens, db)
    assert again["registered"] == [] and again["known"] == 2 and again["missing"] == []

    catalog["client"].delete_table(DatabaseName=db, Name="trips")
    third = _sync(client, tokens, db)
    [missing] = third["missing"]
    assert missing["base_path"] == f"{lake}/trips" and third["known"] == 1
    with app.state.database.transaction() as session:
        table = TableRepo(session).get(missing["id"])  # still registered: disabled, not deleted
        assert table.enabled is False
    listed = client.get("/api/v1/discovery/tables", params={"state": "missing"}, headers=tokens["viewer"]).json()
    assert [(d["base_path"], d["reason"]) for d in listed["items"]] == [(f"{lake}/trips", "dropped from the catalog")]

    unknown = client.post("/api/v1/discovery/glue-sync", json={"database": "no_such_db"}, headers=tokens["admin"])
    assert unknown.status_code == 404 and "no database 'no_such_db'" in unknown.text
    assert client.post("/api/v1/discovery/glue-sync", json={"database": db},
                       headers=tokens["operator"]).status_code == 403


def test_the_managers_leader_syncs_the_configured_glue_databases_periodically(catalog, settings, app):
    """TMS_GLUE_SYNC_DATABASES: the leader syncs each database every TMS_GLUE_SYNC_SECONDS; a database the catalog
    lacks is logged and the others go on."""
    import threading
    import time

    from manager.process import ManagerService
    from tms.db import DiscoveryRepo

    db, lake = catalog["database"], catalog["lake"]
    manager = ManagerService(app.state.database, settings.model_copy(update={
        "glue_endpoint_url": app.state.settings.glue_endpoint_url, "glue_region": app.state.settings.glue_region,
        "glue_sync_databases": ["no_such_db", db], "glue_sync_seconds": 0.5, "manager_heartbeat_seconds": 0.2,
        "manager_lease_seconds": 4, "planner_tick_seconds": 3600, "planner_scan_seconds": 3600}))
    thread = threading.Thread(target=manager.run, daemon=True)
    thread.start()
    try:
        def registered() -> set[str]:
            with app.state.database.transaction() as session:
                return {t.base_path for t in TableRepo(session).find(limit=100)[0]}
        deadline = time.monotonic() + 60
        while not {f"{lake}/orders", f"{lake}/trips"} <= registered():
            assert time.monotonic() < deadline, f"the periodic sync registered {registered()}"
            time.sleep(0.2)
        catalog["client"].delete_table(DatabaseName=db, Name="trips")
        while True:  # the next sync notices the drop
            with app.state.database.transaction() as session:
                rows, _ = DiscoveryRepo(session).list(state="missing", limit=100, offset=0)
            if f"{lake}/trips" in [r.base_path for r in rows]:
                break
            assert time.monotonic() < deadline + 30, "the periodic sync did not notice the dropped table"
            time.sleep(0.2)
    finally:
        manager.stop()
        thread.join(timeout=30)
