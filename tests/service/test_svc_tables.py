"""The table registry on the shared fixture tables (real Spark + Hudi writers)."""
from __future__ import annotations

import hashlib
import os
import shutil

import pytest
from sqlalchemy import text

from tms.db import TableRepo, TaskRepo, TaskState

EXPECTED = {  # fixture -> (type, version, record keys, partition fields)
    "cow_v6_nonpartitioned": ("COPY_ON_WRITE", 6, ["id"], []),
    "cow_v8_nonpartitioned": ("COPY_ON_WRITE", 8, ["id"], []),
    "mor_v6_trips_8i1u": ("MERGE_ON_READ", 6, ["uuid"], ["city"]),
    "mor_v8_trips_8i3u1d": ("MERGE_ON_READ", 8, ["uuid"], ["city"]),
}


def _tree_digest(path) -> str:
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(full.encode())
            with open(full, "rb") as fh:
                digest.update(fh.read())
    return digest.hexdigest()


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_register_reads_hoodie_properties(register, fixture):
    table = register(fixture)
    table_type, version, keys, partitions = EXPECTED[fixture]
    assert (table["table_type"], table["table_version"], table["record_key_fields"], table["partition_fields"]) == (
        table_type, version, keys, partitions)
    assert table["enabled"] and table["policies"]["hoodie.compact.inline.max.delta.commits"] == 5


def test_register_every_fixture_and_inspect_it(client, register, tokens, hudi_tables):
    for name in hudi_tables:
        table = register(name)
        detail = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"])
        assert detail.status_code == 200, detail.text
        body = detail.json()
        assert body["timeline"]["instants"] > 0 and body["health"]["status"] in ("ok", "warning")
        assert body["properties"]["hoodie.table.name"] == body["name"]
        assert body["file_group_stats"] is None or body["file_group_stats"]["file_groups"] >= 1


def test_detail_shows_pending_compaction_plan(client, register, tokens):
    table = register("mor_v8_trips_8i3u1d")
    body = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"]).json()
    assert "compaction" in body["timeline"]["by_action"] or "commit" in body["timeline"]["by_action"]
    assert body["timeline"]["last_completed"]["completion_time"]  # v8 names carry completion times


def test_registration_errors(client, tokens, hudi_tables, tmp_path, register):
    admin = tokens["admin"]
    outside = client.post("/api/v1/tables", json={"base_path": str(tmp_path)}, headers=admin)
    assert outside.status_code == 422 and "outside the storage roots" in outside.json()["detail"]
    root = hudi_tables["cow_v6_nonpartitioned"].parent
    missing = client.post("/api/v1/tables", json={"base_path": str(root / "nothing")}, headers=admin)
    assert (missing.status_code, missing.json()["detail"]) == (
        422, f"body.base_path: {root / 'nothing'} does not exist")
    not_a_table = client.post("/api/v1/tables", json={"base_path": str(root)}, headers=admin)
    assert not_a_table.status_code == 422 and "is not a Hudi table" in not_a_table.json()["detail"]
    relative = client.post("/api/v1/tables", json={"base_path": "data/t"}, headers=admin)
    assert relative.status_code == 422 and "body.base_path" in relative.json()["detail"]
    bad_policy = client.post("/api/v1/tables", json={"base_path": str(hudi_tables["cow_v6_nonpartitioned"]),
                                                     "policies": {"hoodie.cleaner.policy": "KEEP_ALL"}}, headers=admin)
    assert bad_policy.status_code == 422 and "body.policies.hoodie.cleaner.policy" in bad_policy.json()["detail"]
    register("cow_v6_nonpartitioned")
    again = client.post("/api/v1/tables", json={"base_path": "file:" + str(hudi_tables["cow_v6_nonpartitioned"])},
                        headers=admin)
    assert again.status_code == 409 and "already registered" in again.json()["detail"]


def test_unsupported_table_version_is_refused(client, tokens, hudi_tables):
    copy = hudi_tables["cow_v6_nonpartitioned"].parent / "v5_copy"
    shutil.copytree(hudi_tables["cow_v6_nonpartitioned"], copy)
    props = copy / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    response = client.post("/api/v1/tables", json={"base_path": str(copy)}, headers=tokens["admin"])
    assert response.status_code == 422 and "version 5" in response.json()["detail"]


def test_list_filters_and_pages(client, register, tokens):
    for name in EXPECTED:
        register(name)
    viewer = tokens["viewer"]
    mor = client.get("/api/v1/tables", params={"table_type": "MERGE_ON_READ"}, headers=viewer).json()
    assert mor["total"] == 2 and {t["table_type"] for t in mor["items"]} == {"MERGE_ON_READ"}
    page_of_all = client.get("/api/v1/tables", headers=viewer).json()
    page = client.get("/api/v1/tables", params={"limit": 3, "offset": 3}, headers=viewer).json()
    assert page["total"] == 4 and len(page["items"]) == 1
    by_name = client.get("/api/v1/tables", params={"name": "trips"}, headers=viewer).json()
    assert by_name["total"] == 2
    assert client.get("/api/v1/tables", params={"limit": 0}, headers=viewer).status_code == 422
    first = client.get("/api/v1/tables", params={"limit": 1}, headers=viewer).json()
    after = client.get("/api/v1/tables", params={"limit": 1, "offset": 1, "cursor": first["next_cursor"]},
                       headers=viewer).json()  # an offset after a cursor skips rows past the cursor's
    assert [t["id"] for t in after["items"]] == [t["id"] for t in page_of_all["items"]][2:3]
    for cursor in (first["next_cursor"].replace("tables", "tasks"), "tables.x", "tables"):
        assert client.get("/api/v1/tables", params={"cursor": cursor}, headers=viewer).status_code == 422, cursor
    assert client.get("/api/v1/tables", params={"table_type": "X"}, headers=viewer).status_code == 422


def test_patch_policies_and_enable(client, register, tokens):
    table = register("mor_v6_trips_8i1u", policies={"hoodie.compact.inline.trigger.strategy": "NUM_OR_TIME"})
    url = f"/api/v1/tables/{table['id']}"
    admin = tokens["admin"]
    changed = client.patch(url, json={"enabled": False, "priority": 7, "queue": "fast", "policies": {
        "hoodie.compact.inline.max.delta.commits": 2, "hoodie.compaction.strategy": "DayBasedCompactionStrategy",
        "hoodie.compact.inline.trigger.strategy": None}}, headers=admin)
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["enabled"], body["priority"], body["queue"]) == (False, 7, "fast")
    policies = body["policies"]
    assert policies["hoodie.compact.inline.max.delta.commits"] == 2
    assert policies["hoodie.compact.inline.trigger.strategy"] == "NUM_COMMITS"  # back to the default
    assert policies["hoodie.compaction.strategy"].endswith(".DayBasedCompactionStrategy")
    bad = client.patch(url, json={"policies": {"hoodie.compact.inline.max.delta.commits": "many"}}, headers=admin)
    assert bad.status_code == 422 and "hoodie.compact.inline.max.delta.commits" in bad.json()["detail"]
    assert client.patch(url, json={"priority": None}, headers=admin).status_code == 422
    assert client.patch(url, json={"enabled": None}, headers=admin).status_code == 422
    assert client.patch(url, json={"priority": 10**6}, headers=admin).status_code == 422
    detail = client.get(url, headers=tokens["viewer"]).json()
    assert detail["priority"] == 7 and "disabled" in " ".join(detail["health"]["reasons"])


def test_delete_unregisters_without_touching_files(client, app, register, tokens, hudi_tables):
    path = hudi_tables["mor_v6_nonpartitioned_rollback"]
    before = _tree_digest(path)
    table = register("mor_v6_nonpartitioned_rollback")
    url = f"/api/v1/tables/{table['id']}"
    assert client.delete(url, headers=tokens["admin"]).status_code == 204
    assert client.get(url, headers=tokens["admin"]).status_code == 404
    assert client.delete(url, headers=tokens["admin"]).status_code == 404
    assert _tree_digest(path) == before


def test_delete_is_refused_while_a_task_runs(client, app, register, tokens):
    table = register("mor_v6_trips_8i1u")
    with app.state.database.transaction() as session:
        TaskRepo(session).create(table_id=table["id"], service="compaction", instant="20250331040000000",
                                 state=TaskState.RUNNABLE)
        TaskRepo(session).claim_next(owner="w", lease_seconds=60)
    response = client.delete(f"/api/v1/tables/{table['id']}", headers=tokens["admin"])
    assert response.status_code == 409 and "running" in response.json()["detail"]


def test_unknown_and_malformed_table_ids(client, tokens):
    viewer = tokens["viewer"]
    assert client.get("/api/v1/tables/424242", headers=viewer).status_code == 404
    assert client.get("/api/v1/tables/abc", headers=viewer).status_code == 422
    assert client.get(f"/api/v1/tables/{2**64}", headers=viewer).status_code == 422
    assert client.patch("/api/v1/tables/424242", json={}, headers=tokens["admin"]).status_code == 404


def test_unreadable_table_reports_error_health(client, register, tokens, hudi_tables):
    copy = hudi_tables["cow_v8_nonpartitioned"].parent / "to_remove"
    shutil.copytree(hudi_tables["cow_v8_nonpartitioned"], copy)
    response = client.post("/api/v1/tables", json={"base_path": str(copy)}, headers=tokens["admin"])
    shutil.rmtree(copy)
    detail = client.get(f"/api/v1/tables/{response.json()['id']}", headers=tokens["viewer"]).json()
    assert detail["health"]["status"] == "error" and "cannot read the table" in detail["health"]["reasons"][0]


@pytest.fixture
def links(hudi_tables):
    """A scratch folder inside the storage roots (the fixtures' folder), removed after the test."""
    folder = hudi_tables["cow_v6_nonpartitioned"].parent / f"links-{os.getpid()}"
    folder.mkdir()
    yield folder
    shutil.rmtree(folder)


def test_a_table_registered_through_a_symlink_is_the_same_table(client, tokens, register, hudi_tables, links):
    first = register("cow_v6_nonpartitioned")
    os.symlink(hudi_tables["cow_v6_nonpartitioned"], links / "alias")
    again = client.post("/api/v1/tables", json={"base_path": str(links / "alias")}, headers=tokens["admin"])
    assert again.status_code == 409, again.text
    assert f"already registered as table {first['id']}" in again.json()["detail"]
    # A writer's callback through the symlink reaches the same table.
    assert client.get(f"/api/v1/tables/{first['id']}", headers=tokens["admin"]).json()["base_path"] == \
        str(hudi_tables["cow_v6_nonpartitioned"].resolve())


def test_a_symlink_leaving_the_storage_roots_is_refused(client, tokens, hudi_tables, links, tmp_path):
    outside = shutil.copytree(hudi_tables["cow_v8_nonpartitioned"], tmp_path / "t")
    os.symlink(outside, links / "escape")
    response = client.post("/api/v1/tables", json={"base_path": str(links / "escape")}, headers=tokens["admin"])
    assert response.status_code == 422 and "outside the storage roots" in response.json()["detail"]


def test_two_tables_under_symlinked_folders_stay_two_tables(client, tokens, hudi_tables, links):
    ids = set()
    for name in ("a", "b"):
        shutil.copytree(hudi_tables["cow_v8_nonpartitioned"], links / f"real-{name}" / "t")
        os.symlink(links / f"real-{name}", links / f"folder-{name}")
        response = client.post("/api/v1/tables", json={"base_path": str(links / f"folder-{name}" / "t")},
                               headers=tokens["admin"])
        assert response.status_code == 201, response.text
        assert response.json()["base_path"] == str((links / f"real-{name}" / "t").resolve())
        ids.add(response.json()["id"])
    assert len(ids) == 2
    for table_id in ids:
        assert client.delete(f"/api/v1/tables/{table_id}", headers=tokens["admin"]).status_code == 204


def test_a_policy_change_or_enabling_asks_the_periodic_trigger_for_a_look(client, app, register, tokens):
    table = register("mor_v8_trips_8i3u1d")
    url = f"/api/v1/tables/{table['id']}"
    admin = tokens["admin"]

    def tick_due_at():
        with app.state.database.transaction() as session:
            return TableRepo(session).get(table["id"]).tick_due_at

    assert tick_due_at() is None, "never read yet: the scan's business"
    assert client.patch(url, json={"priority": 3}, headers=admin).status_code == 200
    assert tick_due_at() is None, "a change the trigger does not depend on"
    assert client.patch(url, json={"policies": {"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED"}},
                        headers=admin).status_code == 200
    assert tick_due_at() is not None
    with app.state.database.transaction() as session:
        session.execute(text("UPDATE tables SET tick_due_at = NULL, enabled = false WHERE id = :id"),
                        {"id": table["id"]})
    assert client.patch(url, json={"enabled": True}, headers=admin).status_code == 200
    assert tick_due_at() is not None
    with app.state.database.transaction() as session:  # asked for now: the leader's next marking takes it
        assert session.scalar(text("SELECT tick_due_at <= now() FROM tables WHERE id = :id"), {"id": table["id"]})
