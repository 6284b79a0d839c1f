"""The writers' lock as table policy: set at registration and with PATCH, validated as TMS will use it (a
provider TMS cannot share is refused with one line and nothing is stored), shown in the table's detail."""
from __future__ import annotations

from test_svc_dashboard import _sign_in

from service.ui.session import CSRF_FIELD
from tms.db import TableRepo

FS_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
IN_PROCESS = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
DYNAMO = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"


def _stored(app, table_id: int) -> dict[str, str]:
    with app.state.database.transaction() as session:
        return dict(TableRepo(session).get(table_id).concurrency_options)


def test_lock_options_are_set_at_registration_and_shown(client, app, register, tokens):
    table = register("cow_v8_nonpartitioned", policies={
        "hoodie.write.lock.provider": FS_LOCK, "hoodie.write.lock.wait_time_ms": 2000,
        "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
        "hoodie.cleaner.commits.retained": 4})
    assert _stored(app, table["id"]) == {"hoodie.write.lock.provider": FS_LOCK,
                                         "hoodie.write.lock.wait_time_ms": "2000",
                                         "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}
    detail = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"]).json()
    assert detail["policies"]["hoodie.write.lock.provider"] == FS_LOCK
    assert detail["policies"]["hoodie.write.lock.wait_time_ms"] == "2000"
    assert detail["policies"]["hoodie.cleaner.commits.retained"] == 4


def test_the_dashboard_shows_and_edits_the_lock(client, app, register, tokens):
    table = register("cow_v8_nonpartitioned")
    csrf = _sign_in(client, tokens["admin"])
    page = f"/ui/tables/{table['id']}"
    assert "Single writer: TMS takes no lock" in client.get(page).text
    saved = client.post(f"{page}/settings", data={CSRF_FIELD: csrf, "priority": "0", "enabled": "on",
                                                  "policies": f"hoodie.write.lock.provider={FS_LOCK}\n"})
    assert "Table settings saved." in saved.text
    assert _stored(app, table["id"]) == {"hoodie.write.lock.provider": FS_LOCK}
    shown = client.get(page).text
    assert "Concurrency control" in shown and FS_LOCK in shown and "Single writer" not in shown
    refused = client.post(f"{page}/settings", data={CSRF_FIELD: csrf, "priority": "0", "enabled": "on",
                                                    "policies": f"hoodie.write.lock.provider={IN_PROCESS}\n"})
    assert "notice error" in refused.text and "locks within one JVM" in refused.text
    assert _stored(app, table["id"]) == {"hoodie.write.lock.provider": FS_LOCK}


def test_a_provider_tms_cannot_share_is_refused_with_one_line(client, app, tokens, hudi_tables):
    for provider, why in ((IN_PROCESS, "locks within one JVM"), (DYNAMO, "does not implement DynamoDB")):
        response = client.post("/api/v1/tables", headers=tokens["admin"], json={
            "base_path": str(hudi_tables["cow_v8_nonpartitioned"]),
            "policies": {"hoodie.write.lock.provider": provider}})
        assert response.status_code == 422, response.text
        assert why in response.json()["detail"] and "\n" not in response.json()["detail"]
    listed = client.get("/api/v1/tables", headers=tokens["viewer"]).json()
    assert listed["total"] == 0, "nothing registered"
    bad_value = client.post("/api/v1/tables", headers=tokens["admin"], json={
        "base_path": str(hudi_tables["cow_v8_nonpartitioned"]),
        "policies": {"hoodie.write.lock.provider": FS_LOCK, "hoodie.write.lock.wait_time_ms": "soon"}})
    assert bad_value.status_code == 422 and "hoodie.write.lock.wait_time_ms=soon" in bad_value.json()["detail"]


def test_patch_sets_changes_and_removes_lock_options(client, app, register, tokens):
    table = register("mor_v8_trips_8i3u1d")
    url, admin = f"/api/v1/tables/{table['id']}", tokens["admin"]
    assert _stored(app, table["id"]) == {}
    assert "hoodie.write.lock.provider" not in table["policies"]

    changed = client.patch(url, headers=admin, json={"policies": {
        "hoodie.write.lock.provider": FS_LOCK, "hoodie.write.lock.num_retries": "3"}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["policies"]["hoodie.write.lock.num_retries"] == "3"

    refused = client.patch(url, headers=admin, json={"policies": {
        "hoodie.write.lock.provider": DYNAMO, "hoodie.compact.inline.max.delta.commits": 2}})
    assert refused.status_code == 422 and "DynamoDB" in refused.json()["detail"]
    assert _stored(app, table["id"])["hoodie.write.lock.provider"] == FS_LOCK, "nothing changed"
    detail = client.get(url, headers=tokens["viewer"]).json()
    assert detail["policies"]["hoodie.compact.inline.max.delta.commits"] == 5, "nothing changed"

    # A lock option left without its provider is refused; removing them all returns to a single writer.
    orphan = client.patch(url, headers=admin, json={"policies": {"hoodie.write.lock.provider": None}})
    assert orphan.status_code == 422 and "hoodie.write.lock.num_retries is set" in orphan.json()["detail"]
    removed = client.patch(url, headers=admin, json={"policies": {"hoodie.write.lock.provider": None,
                                                                  "hoodie.write.lock.num_retries": None}})
    assert removed.status_code == 200 and _stored(app, table["id"]) == {}
    assert "hoodie.write.lock.provider" not in removed.json()["policies"]
