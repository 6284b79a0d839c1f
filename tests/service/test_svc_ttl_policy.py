"""TTL policies are checked against the table when they are set: a record TTL field that holds no time, or a
partition TTL on a table without partitions, is refused with a 422 naming the option, and nothing is stored."""
from __future__ import annotations

import re
from datetime import datetime, timedelta

from service.ui.session import CSRF_FIELD
from tms.db import TtlTaskRepo
from tms.table_service import TableService
from tms.task_payload import TtlRequest


def test_ttl_policies_are_checked_against_the_table(client, register, tokens):
    admin = tokens["admin"]
    table = register("mor_v8_trips_8i3u1d")  # fields: ts (long), uuid, rider, driver, fare (double), city
    url = f"/api/v1/tables/{table['id']}"
    ok = client.patch(url, headers=admin, json={"policies": {
        "tms.ttl.field": "ts", "tms.ttl.days": 30, "hoodie.partition.ttl.days.retain": 7,
        "hoodie.partition.ttl.management.max.partitions.to.delete": 2}})
    assert ok.status_code == 200, ok.text
    assert (ok.json()["policies"]["tms.ttl.field"], ok.json()["policies"]["hoodie.partition.ttl.days.retain"]) == (
        "ts", 7)
    for policies, option, message in [
            ({"tms.ttl.field": "fare"}, "tms.ttl.field", "holds no time"),
            ({"tms.ttl.field": "nope"}, "tms.ttl.field", "is not a field of the table's schema"),
            ({"tms.ttl.days": None}, "policies", "set together"),
            ({"hoodie.partition.ttl.strategy.type": "KEEP_BY_CREATION_TIME"}, "hoodie.partition.ttl.strategy.type",
             "KEEP_BY_TIME")]:
        refused = client.patch(url, headers=admin, json={"policies": policies})
        assert refused.status_code == 422, (policies, refused.text)
        assert option in refused.json()["detail"] and message in refused.json()["detail"], refused.json()
    stored = client.get(url, headers=admin).json()["policies"]
    assert (stored["tms.ttl.field"], stored["tms.ttl.days"]) == ("ts", 30)


def test_partition_ttl_is_refused_on_a_table_without_partitions(client, register, tokens):
    table = register("cow_v8_nonpartitioned")
    refused = client.patch(f"/api/v1/tables/{table['id']}", headers=tokens["admin"],
                           json={"policies": {"hoodie.partition.ttl.days.retain": 7}})
    assert refused.status_code == 422
    assert "hoodie.partition.ttl.days.retain" in refused.json()["detail"]
    assert "not partitioned" in refused.json()["detail"]


def test_the_table_shows_its_ttl_state(app, client, register, tokens):
    table = register("mor_v8_trips_8i3u1d")  # partitioned by city, written long before today
    url = f"/api/v1/tables/{table['id']}"
    assert client.get(url, headers=tokens["viewer"]).json()["ttl"] is None  # no TTL policy
    client.patch(url, headers=tokens["admin"], json={"policies": {"hoodie.partition.ttl.days.retain": 1,
                                                                  "tms.ttl.field": "ts", "tms.ttl.days": 30}})
    ttl = client.get(url, headers=tokens["viewer"]).json()["ttl"]
    cities = client.get(url, headers=tokens["viewer"]).json()["file_group_stats"]["partitions"]
    assert ttl["expired_partitions_total"] == cities == len(ttl["expired_partitions"]) > 0  # by their last write
    assert ttl["record_ttl_cutoff"] and (ttl["last_record_ttl"], ttl["last_partition_delete"]) == (None, None)
    # The TTL tasks TMS runs on schedule: partitions first, then records; none requested yet, so both due now.
    assert [(s["service"], s["interval_hours"], s["last_task_id"], s["next_due"]) for s in ttl["schedule"]] == [
        ("partition_ttl", 24, None, None), ("ttl", 24, None, None)]
    with app.state.database.transaction() as session:
        task = TtlTaskRepo(session).request(table["id"], TableService.PARTITION_TTL, TtlRequest(policy={}, now="x"))
    [partitions, records] = client.get(url, headers=tokens["viewer"]).json()["ttl"]["schedule"]
    assert (partitions["last_task_id"], partitions["last_state"]) == (task.id, "RUNNABLE")
    due = datetime.fromisoformat(partitions["next_due"]) - datetime.fromisoformat(partitions["last_requested_at"])
    assert due == timedelta(hours=24) and records["next_due"] is None
    # The dashboard's table page shows the same beside the TTL state (signed in as a browser is).
    login = client.get("/ui/login")
    csrf = re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', login.text).group(1)
    client.post("/ui/login", data={CSRF_FIELD: csrf, "token": tokens["viewer"]["Authorization"].split()[1]})
    page = client.get(f"/ui/tables/{table['id']}").text
    assert f"task {task.id}</a> RUNNABLE" in page and "partition ttl task" in page
