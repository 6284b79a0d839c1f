"""A lake of 200 tables of mixed kinds (COPY_ON_WRITE and MERGE_ON_READ, table versions 6, 8 and 9, partitioned
or not, in three catalog databases at two depths, and folders that look like tables TMS cannot serve) is
scanned under four policy templates: every table TMS serves is registered with the policies of the most
specific template matching it, each other one is listed refused with its reason, a rescan changes nothing, and
a callback from a table created afterwards registers it under its template."""
from __future__ import annotations

import os
import shutil
import uuid

import pytest

from tms.hudi.table.writer import create_table_for_records

ROWS = [{"id": i, "ts": i, "city": "sf" if i % 2 else "la", "v": f"r{i}"} for i in range(4)]
DELTAS = "hoodie.compact.inline.max.delta.commits"
RETAINED = "hoodie.cleaner.commits.retained"
# folder, catalog database, name stem, table type, version, partitioned, how many
SERVED = [
    ("sales", "sales", "orders", "MERGE_ON_READ", 8, True, 30),
    ("sales", "sales", "refunds", "COPY_ON_WRITE", 6, False, 20),
    ("ops", "ops", "events", "MERGE_ON_READ", 9, True, 30),
    ("ops", "ops", "metrics", "COPY_ON_WRITE", 8, False, 20),
    ("raw/landing", "raw", "clicks", "MERGE_ON_READ", 6, True, 40),
    ("raw/landing", "raw", "events", "COPY_ON_WRITE", 9, True, 40),
]
UNSERVED_VERSIONS = [2, 3, 4, 5, 7]  # table versions TMS does not serve, 3 folders each
UNKNOWN_TYPE = 5                     # folders whose hoodie.properties names no table type TMS knows


def _template(table_folder: str, stem: str) -> str:
    """The template the most specific rule gives: a name pattern, then a database, then the longest prefix."""
    if stem == "events":
        return "events"
    if table_folder == "sales":
        return "sales-db"
    return "raw" if table_folder.startswith("raw") else "lake"


EXPECTED_POLICIES = {"events": {DELTAS: 2, RETAINED: 12}, "sales-db": {DELTAS: 4}, "raw": {RETAINED: 30},
                     "lake": {DELTAS: 8}}


def _fake_table(path: str, properties: str) -> None:
    os.makedirs(f"{path}/.hoodie", exist_ok=True)
    with open(f"{path}/.hoodie/hoodie.properties", "w") as fh:
        fh.write(properties)


@pytest.fixture
def lake(settings):
    root = settings.storage_roots[0].rstrip("/") + f"/lake-{uuid.uuid4().hex[:8]}"
    served: dict[str, str] = {}  # base path -> template
    for folder, database, stem, table_type, version, partitioned, count in SERVED:
        for n in range(count):
            path = f"{root}/{folder}/{stem}_{n}"
            create_table_for_records(path, ROWS, table_type=table_type, version=version, key=["id"], ordering=["ts"],
                                     partition=["city"] if partitioned else [], database=database,
                                     name=f"{stem}_{n}").write(ROWS, "insert")
            served[path] = _template(folder, stem)
    refused: dict[str, str] = {}  # base path -> what its reason says
    for version in UNSERVED_VERSIONS:
        for n in range(3):
            path = f"{root}/legacy/v{version}_{n}"
            _fake_table(path, f"hoodie.table.name=v{version}_{n}\nhoodie.table.type=COPY_ON_WRITE\n"
                              f"hoodie.table.version={version}\n")
            refused[path] = f"table version {version} is not supported"
    for n in range(UNKNOWN_TYPE):
        path = f"{root}/legacy/strange_{n}"
        _fake_table(path, f"hoodie.table.name=strange_{n}\nhoodie.table.type=APPEND_ONLY\nhoodie.table.version=8\n")
        refused[path] = "APPEND_ONLY"
    assert len(served) + len(refused) == 200
    yield root, served, refused
    shutil.rmtree(root, ignore_errors=True)


def _put_template(client, tokens, name, **body):
    response = client.put(f"/api/v1/policy-templates/{name}", json=body, headers=tokens["admin"])
    assert response.status_code == 200, response.text


def _scan(client, tokens, root):
    response = client.post("/api/v1/discovery/scan", json={"root": root}, headers=tokens["admin"])
    assert response.status_code == 200, response.text
    [scan] = response.json()["scans"]
    return scan


def _all_tables(client, tokens):
    tables, offset = [], 0
    while True:
        page = client.get("/api/v1/tables", params={"limit": 100, "offset": offset}, headers=tokens["viewer"]).json()
        tables += page["items"]
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return tables


@pytest.mark.slow
def test_a_lake_of_200_tables_is_onboarded_under_its_templates(client, tokens, lake, settings, app):
    root, served, refused = lake
    _put_template(client, tokens, "lake", path_prefix=root, policies={DELTAS: 8})
    _put_template(client, tokens, "raw", path_prefix=f"{root}/raw", policies={RETAINED: 30})
    _put_template(client, tokens, "sales-db", database="sales", policies={DELTAS: 4})
    _put_template(client, tokens, "events", name_pattern="events_*", policies={DELTAS: 2, RETAINED: 12})

    scan = _scan(client, tokens, root)
    assert sorted(r["base_path"] for r in scan["registered"]) == sorted(served)
    reasons = {r["base_path"]: r["reason"] for r in scan["refused"]}
    assert sorted(reasons) == sorted(refused)
    for path, says in refused.items():
        assert says in reasons[path], (path, reasons[path])
    assert scan["missing"] == [] and scan["known"] == 0

    tables = {t["base_path"]: t for t in _all_tables(client, tokens)}
    assert set(tables) == set(served)
    defaults = client.get("/api/v1/tables/" + str(next(iter(tables.values()))["id"]),
                          headers=tokens["viewer"]).json()
    assert defaults["sources"]  # the table API says where each value comes from
    for path, template in served.items():
        t = tables[path]
        assert t["template"] == template, (path, t["template"])
        for option, value in EXPECTED_POLICIES[template].items():
            assert t["policies"][option] == value, (path, option)
    by_database = {t["database"] for t in tables.values()}
    assert by_database == {"sales", "ops", "raw"}

    again = _scan(client, tokens, root)
    assert again["registered"] == [] and again["known"] == len(served)
    assert sorted(r["base_path"] for r in again["refused"]) == sorted(refused)
    assert again["listings"] < scan["listings"], "known tables are not listed again"

    # A table created afterwards announces itself by its first callback: registered under its template.
    from fastapi.testclient import TestClient
    from test_svc_callback import hudi_message

    from service.app import create_app
    newcomer = f"{root}/ops/events_new"
    create_table_for_records(newcomer, ROWS, table_type="MERGE_ON_READ", version=8, key=["id"], ordering=["ts"],
                             partition=[], database="ops", name="events_new").write(ROWS, "insert")
    admitting = create_app(settings.model_copy(update={"discovery_admit_callbacks": True}), app.state.database)
    with TestClient(admitting) as admitting_client:
        accepted = admitting_client.post("/api/v1/hudi/callback", json=hudi_message(newcomer, "20260101000000000"),
                                         headers={"HUDI-CALLBACK-KEY": settings.callback_key.get_secret_value()})
        assert accepted.status_code == 202, accepted.text
    [registered] = [t for t in _all_tables(client, tokens) if t["base_path"] == newcomer]
    assert registered["template"] == "events" and registered["policies"][DELTAS] == 2
