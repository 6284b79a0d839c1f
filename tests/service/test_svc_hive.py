"""A Hive Metastore sync (POST /api/v1/discovery/hive-sync) against a real metastore (Hive's standalone metastore
server from Maven Central, tests/hive_metastore) on loopback: each Hudi table of the metastore database is
registered at its location with its policy template's settings (a MERGE_ON_READ table listed three times, as
Hudi's Hive sync lists it, once), the other tables are listed refused with the reason, a second sync registers
nothing twice, and a table dropped from the metastore is disabled, not deleted; the manager's leader syncs the
configured databases periodically. The metastore's URI may list several (a highly available metastore): the first
that answers is read. A metastore that is not configured or not reachable is refused with one line, nothing
changed."""
from __future__ import annotations

import shutil
import threading
import time
import uuid

import pytest

from tms.db import DiscoveryRepo, TableRepo
from tms.hudi.storage.paths import normalize_base_path
from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "v": f"r{i}"} for i in range(3)]
HUDI_MOR_INPUT = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
HUDI_COW_INPUT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
PARQUET_INPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
PARQUET_OUTPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"


@pytest.fixture(scope="session")
def metastore(tmp_path_factory):
    from hive_metastore.server import HiveMetastore

    server = HiveMetastore.start(tmp_path_factory.mktemp("hive-metastore"))
    yield server
    server.stop()


def _create_table(client, database: str, name: str, location: str, input_format: str,
                  provider: str | None = None) -> None:
    """An external table as Hudi's Hive sync (or Spark's catalog) registers one."""
    from pymetastore.hive_metastore import ttypes

    descriptor = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("id", "bigint", ""), ttypes.FieldSchema("v", "string", "")], location=location,
        inputFormat=input_format, outputFormat=PARQUET_OUTPUT,
        serdeInfo=ttypes.SerDeInfo(serializationLib=PARQUET_SERDE, parameters={}), parameters={})
    parameters = {"EXTERNAL": "TRUE", **({"spark.sql.sources.provider": provider} if provider else {})}
    client.create_table(ttypes.Table(tableName=name, dbName=database, sd=descriptor, partitionKeys=[],
                                     parameters=parameters, tableType="EXTERNAL_TABLE"))


@pytest.fixture
def catalog(metastore, settings, app, tmp_path):
    from loopback_server import free_port
    from pymetastore.hive_metastore import ttypes

    # A highly available metastore's URI list whose first metastore is down: the sync reads the next.
    uris = f"thrift://127.0.0.1:{free_port()},{metastore.uri}"
    original = app.state.settings
    app.state.settings = original.model_copy(update={"hive_metastore_uri": uris})
    database = f"sales_{uuid.uuid4().hex[:6]}"
    lake = settings.storage_roots[0].rstrip("/") + f"/hive-{database}"
    for name, kind in (("orders", "MERGE_ON_READ"), ("trips", "COPY_ON_WRITE")):
        create_table_for_records(f"{lake}/{name}", ROWS, table_type=kind, version=8, key=["id"], ordering=["ts"],
                                 partition=[]).write(ROWS, "insert")
    outside = normalize_base_path(str(tmp_path / "outside"))  # a Hudi table's location outside the storage roots
    with metastore.client() as client:
        client.create_database(ttypes.Database(name=database, parameters={},
                                               locationUri=(metastore.warehouse / f"{database}.db").as_uri()))
        _create_table(client, database, "orders", f"{lake}/orders", HUDI_MOR_INPUT, "hudi")
        _create_table(client, database, "orders_ro", f"{lake}/orders", HUDI_COW_INPUT)
        _create_table(client, database, "orders_rt", f"{lake}/orders", HUDI_MOR_INPUT)
        _create_table(client, database, "trips", f"{lake}/trips", HUDI_COW_INPUT)
        _create_table(client, database, "clicks", f"{lake}/clicks", PARQUET_INPUT)
        _create_table(client, database, "outside", outside, HUDI_COW_INPUT)
    try:
        yield {"database": database, "lake": lake, "outside": outside}
    finally:
        app.state.settings = original
        shutil.rmtree(lake, ignore_errors=True)


def _sync(client, tokens, database, **body):
    response = client.post("/api/v1/discovery/hive-sync", json={"database": database, **body},
                           headers=tokens["admin"])
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.slow
@pytest.mark.beside
def test_a_hive_metastore_database_is_synced_and_a_dropped_table_disabled(client, tokens, catalog, metastore, app):
    db, lake = catalog["database"], catalog["lake"]
    client.put("/api/v1/policy-templates/sales", json={"path_prefix": lake, "queue": "bulk",
                                                        "policies": {"hoodie.cleaner.commits.retained": 15}},
               headers=tokens["admin"])
    first = _sync(client, tokens, db)
    assert first["root"] == f"hive://{db}"
    assert sorted(r["base_path"] for r in first["registered"]) == [f"{lake}/orders", f"{lake}/trips"]
    refused = {r["base_path"]: r["reason"] for r in first["refused"]}
    assert refused == {
        f"{lake}/clicks": f"{db}.clicks is not a Hudi table (input format {PARQUET_INPUT})",
        catalog["outside"]: (f"{db}.outside lies at {catalog['outside']}, outside the storage roots "
                             f"({normalize_base_path(app.state.settings.storage_roots[0])})")}
    tables = client.get("/api/v1/tables", params={"limit": 100}, headers=tokens["viewer"]).json()["items"]
    by_path = {t["base_path"]: t for t in tables}
    assert set(by_path) == {f"{lake}/orders", f"{lake}/trips"}  # the MOR table's three entries: one table
    orders = by_path[f"{lake}/orders"]
    assert (orders["table_type"], orders["template"], orders["queue"]) == ("MERGE_ON_READ", "sales", "bulk")
    assert orders["policies"]["hoodie.cleaner.commits.retained"] == 15
    assert by_path[f"{lake}/trips"]["table_type"] == "COPY_ON_WRITE"

    again = _sync(client, tokens, db)
    assert again["registered"] == [] and again["known"] == 2 and again["missing"] == []

    with metastore.client() as hms:
        hms.drop_table(db, "trips", False)
    third = _sync(client, tokens, db)
    [missing] = third["missing"]
    assert missing["base_path"] == f"{lake}/trips" and third["known"] == 1
    with app.state.database.transaction() as session:
        table = TableRepo(session).get(missing["id"])  # still registered: disabled, not deleted
        assert table.enabled is False
    listed = client.get("/api/v1/discovery/tables", params={"state": "missing"}, headers=tokens["viewer"]).json()
    assert [(d["base_path"], d["root"], d["reason"]) for d in listed["items"]] == [
        (f"{lake}/trips", f"hive://{db}", "dropped from the catalog")]

    unknown = client.post("/api/v1/discovery/hive-sync", json={"database": "no_such_db"}, headers=tokens["admin"])
    assert unknown.status_code == 404 and "no database 'no_such_db'" in unknown.text
    assert client.post("/api/v1/discovery/hive-sync", json={"database": db},
                       headers=tokens["operator"]).status_code == 403


def test_a_metastore_not_configured_or_unreachable_is_refused_with_nothing_changed(client, tokens, app):
    from loopback_server import free_port

    original = app.state.settings
    try:
        unset = client.post("/api/v1/discovery/hive-sync", json={"database": "sales"}, headers=tokens["admin"])
        assert unset.status_code == 422
        assert unset.json()["detail"] == ("no Hive Metastore is configured: set TMS_HIVE_METASTORE_URI "
                                          "(thrift://host:port)")
        closed = f"thrift://127.0.0.1:{free_port()}"  # nothing listens there
        app.state.settings = original.model_copy(update={"hive_metastore_uri": closed})
        down = client.post("/api/v1/discovery/hive-sync", json={"database": "sales"}, headers=tokens["admin"])
        assert down.status_code == 422
        assert down.json()["detail"].startswith(f"cannot reach the Hive Metastore at {closed}: ")
        assert "\n" not in down.json()["detail"]
        other = f"thrift://127.0.0.1:{free_port()}"
        app.state.settings = original.model_copy(update={"hive_metastore_uri": f"{closed}, {other}"})
        both = client.post("/api/v1/discovery/hive-sync", json={"database": "sales"}, headers=tokens["admin"])
        assert both.status_code == 422
        detail = both.json()["detail"]
        assert detail.startswith(f"cannot reach the Hive Metastore at {closed}: ")
        assert f"; cannot reach the Hive Metastore at {other}: " in detail and "\n" not in detail
    finally:
        app.state.settings = original
    with app.state.database.transaction() as session:
        assert TableRepo(session).find(limit=10)[0] == []
        assert DiscoveryRepo(session).list(state=None, limit=10, offset=0)[1] == 0


@pytest.mark.slow
@pytest.mark.beside
def test_the_managers_leader_syncs_the_configured_hive_databases_periodically(catalog, metastore, settings, app):
    """TMS_HIVE_SYNC_DATABASES: the leader syncs each database every TMS_HIVE_SYNC_SECONDS; a database the
    metastore lacks is logged and the others go on."""
    from manager.process import ManagerService

    db, lake = catalog["database"], catalog["lake"]
    manager = ManagerService(app.state.database, settings.model_copy(update={
        "hive_metastore_uri": metastore.uri, "hive_sync_databases": ["no_such_db", db], "hive_sync_seconds": 0.5,
        "manager_heartbeat_seconds": 0.2, "manager_lease_seconds": 4, "planner_tick_seconds": 3600,
        "planner_scan_seconds": 3600}))
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
        with metastore.client() as hms:
            hms.drop_table(db, "trips", False)
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
