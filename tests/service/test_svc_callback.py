"""Hudi's native commit callback, as a Hudi writer sends it: accepted with unknown fields, stored
once however often, in whatever order and however concurrently it arrives."""
from __future__ import annotations

import json
import threading

import pytest
from fastapi import HTTPException

from tms.db import EventRepo

URL = "/api/v1/hudi/callback"


def hudi_message(base_path: str, commit_time: str, **extra) -> dict:
    """`HoodieWriteCommitCallbackMessage` as Jackson writes it (Hudi 1.x: Option fields become
    {"present": ...} objects), plus a field a future Hudi might add."""
    stat = {
        "fileId": "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0", "path": ".0712b9f9_20250126040823628.log.1_0-13-9",
        "cdcStats": None, "prevCommit": "20250126040823628", "numWrites": 3, "numDeletes": 0,
        "numUpdateWrites": 3, "numInserts": 0, "totalWriteBytes": 11835, "totalWriteErrors": 0,
        "tempPath": None, "partitionPath": "", "totalLogRecords": 0, "totalLogFilesCompacted": 0,
        "totalLogSizeCompacted": 0, "totalUpdatedRecordsCompacted": 0, "totalLogBlocks": 0,
        "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0, "fileSizeInBytes": 11835,
        "minEventTime": None, "maxEventTime": None, "runtimeStats": {"totalScanTime": 0, "totalUpsertTime": 812,
                                                                   "totalCreateTime": 0},
        "logVersion": 1, "logOffset": 0, "baseFile": "0712b9f9_0-13-23_20250126040823628.parquet",
        "logFiles": [".0712b9f9_20250126040823628.log.1_0-13-9"], "recordsStats": {"present": False},
    }
    return {"commitTime": commit_time, "tableName": "v6_nonpartitioned_rollback", "basePath": base_path,
            "hoodieWriteStat": [stat], "commitActionType": {"present": True},
            "extraMetadata": {"present": True}, "prevFilePaths": {}, **extra}


def _events(app, table_id):
    with app.state.database.transaction() as session:
        return EventRepo(session).unprocessed(table_id)


def test_native_callback_is_stored_once(client, app, register, hudi_tables, callback_headers):
    table = register("mor_v6_nonpartitioned_rollback")
    body = hudi_message("file://" + str(hudi_tables["mor_v6_nonpartitioned_rollback"]) + "/", "20250126060800000")
    raw = json.dumps(body)  # sent exactly as Hudi does: a JSON string with Content-Type application/json
    headers = {**callback_headers, "Content-Type": "application/json"}
    first = client.post(URL, content=raw, headers=headers)
    assert first.status_code == 202 and first.json() == {"received": 1, "stored": 1, "duplicates": 0}
    again = client.post(URL, content=raw, headers=headers)
    assert again.status_code == 202 and again.json() == {"received": 1, "stored": 0, "duplicates": 1}
    (event,) = _events(app, table["id"])
    # A MERGE_ON_READ table's commit without an action string is a delta commit.
    assert (event.instant, event.action, event.state, event.source) == (
        "20250126060800000", "deltacommit", "completed", "hudi_callback")
    assert event.write_stats[0]["logFiles"] == [".0712b9f9_20250126040823628.log.1_0-13-9"]


def test_action_string_and_old_hudi_message(client, app, register, hudi_tables, callback_headers):
    table = register("cow_v6_nonpartitioned")
    base = str(hudi_tables["cow_v6_nonpartitioned"])
    old = {"commitTime": "20240418173552000", "tableName": "t", "basePath": base, "hoodieWriteStat": []}
    assert client.post(URL, json=old, headers=callback_headers).status_code == 202
    newer = hudi_message(base, "20240418173553000", commitActionType="replacecommit")
    assert client.post(URL, json=newer, headers=callback_headers).status_code == 202
    assert [(e.instant, e.action) for e in _events(app, table["id"])] == [
        ("20240418173552000", "commit"), ("20240418173553000", "replacecommit")]


def test_reordered_and_concurrent_duplicates_store_exactly_one_row_each(
        client, app, register, hudi_tables, callback_headers):
    table = register("mor_v6_trips_8i1u")
    base = str(hudi_tables["mor_v6_trips_8i1u"])
    messages = [hudi_message(base, f"2025033103{i:02d}00000") for i in range(10)]
    results: list[int] = []
    barrier = threading.Barrier(6)

    def send(order):
        barrier.wait()
        for message in order:
            results.append(client.post(URL, json=message, headers=callback_headers).status_code)

    orders = [messages, messages[::-1], messages[3:] + messages[:3]] * 2
    threads = [threading.Thread(target=send, args=(order,)) for order in orders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [202] * 60
    assert sorted(e.instant for e in _events(app, table["id"])) == sorted(m["commitTime"] for m in messages)


def test_callback_rejections(client, register, hudi_tables, callback_headers):
    register("cow_v8_nonpartitioned")
    good = hudi_message(str(hudi_tables["cow_v8_nonpartitioned"]), "20250713010600000")
    assert client.post(URL, json=good).status_code == 401
    assert client.post(URL, json=good, headers={"HUDI-CALLBACK-KEY": "wrong"}).status_code == 401
    unknown = client.post(URL, json={**good, "basePath": "/nowhere/t"}, headers=callback_headers)
    assert unknown.status_code == 404 and "/nowhere/t" in unknown.json()["detail"]
    bad = client.post(URL, json={**good, "commitTime": "2025-07-13"}, headers=callback_headers)
    assert bad.status_code == 422 and "body.commitTime" in bad.json()["detail"]
    relative = client.post(URL, json={**good, "basePath": "relative/t"}, headers=callback_headers)
    assert relative.status_code == 422 and "body.basePath" in relative.json()["detail"]
    action = client.post(URL, json={**good, "commitActionType": "explode"}, headers=callback_headers)
    assert action.status_code == 422 and "commitActionType" in action.json()["detail"]
    not_json = client.post(URL, content=b"{not json", headers={**callback_headers, "Content-Type": "application/json"})
    assert not_json.status_code == 400 and not_json.json()["detail"] == "the request body is not valid JSON"


def test_an_unknown_table_and_a_wrong_key_get_the_same_401(client, register, hudi_tables):
    """An unauthenticated sender learns nothing about which tables are registered."""
    table = register("cow_v8_nonpartitioned", callback_key="the-tables-own-key")
    wrong = {"HUDI-CALLBACK-KEY": "a-guess"}
    known = hudi_message(str(hudi_tables["cow_v8_nonpartitioned"]), "20250713010600000")
    answers = [client.post(URL, json=known, headers=wrong),
               client.post(URL, json={**known, "basePath": "/nowhere/t"}, headers=wrong)]
    event = {"instant": "20250713010600000", "action": "commit", "state": "completed"}
    answers += [client.post("/api/v1/events", json={**event, "table_id": table["id"]}, headers=wrong),
                client.post("/api/v1/events", json={**event, "table_id": 987654}, headers=wrong),
                client.post("/api/v1/events:batch", json={"events": [{**event, "table_id": table["id"]}]},
                            headers=wrong),
                client.post("/api/v1/events:batch", json={"events": [{**event, "table_id": 987654}]},
                            headers=wrong)]
    assert [a.status_code for a in answers] == [401] * 6
    # The same body but for `instance` (the route's path, RFC 9457), whichever table is named.
    assert all(a.json()["instance"] == a.request.url.path for a in answers)
    bodies = {json.dumps({k: v for k, v in a.json().items() if k != "instance"}, sort_keys=True) for a in answers}
    assert len(bodies) == 1, [a.content for a in answers]
    assert client.post(URL, json=known, headers={"HUDI-CALLBACK-KEY": "the-tables-own-key"}).status_code == 202


def test_the_production_api_has_no_test_hook(client, callback_headers):
    assert client.post("/api/v1/noop", headers=callback_headers).status_code == 404


def test_a_table_on_s3_is_found_by_the_spelling_of_its_writers_callbacks():
    """Hadoop's writers name an S3 table `s3a://` (or `s3n://`) in their callbacks; TMS finds the table
    registered as `s3://`, and a table registered in that very spelling before another."""
    import asyncio

    from service.auth import WriterCredential
    from service.intake import IncomingEvent, Intake
    from tms.db.intake import TableIdentity

    class Store:
        tables = [TableIdentity(1, "s3://lake/t", "MERGE_ON_READ", None),
                  TableIdentity(2, "s3://lake/u", "MERGE_ON_READ", None),
                  TableIdentity(3, "s3a://lake/u", "MERGE_ON_READ", None)]
        events: list = []

        async def resolve_tables(self, ids, base_paths):
            return [t for t in self.tables if t.id in ids or t.base_path in base_paths]

        async def add_events(self, events):
            self.events += events
            return len(events)

    class Counts:
        def count_events(self, kind, result, n):
            pass

    store = Store()
    intake = Intake(store, Counts(), cache_seconds=60)  # type: ignore[arg-type]
    events = [IncomingEvent(table_id=None, base_path=path, instant="20260101000000000", action="deltacommit",
                            state="completed") for path in ("s3a://lake/t", "s3n://lake/t", "s3a://lake/u")]
    asyncio.run(intake.accept(events, WriterCredential(trusted=True), kind="hudi_callback"))
    assert [e.table_id for e in store.events] == [1, 1, 3]
    unknown = IncomingEvent(table_id=None, base_path="s3a://lake/v", instant="20260101000000000",
                            action="deltacommit", state="completed")
    with pytest.raises(HTTPException) as refused:
        asyncio.run(intake.accept([unknown], WriterCredential(trusted=True), kind="hudi_callback"))
    assert refused.value.status_code == 404
