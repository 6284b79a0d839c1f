"""The records the repositories hand out instead of rows (tms/db/records.py): one field per column of their row,
frozen, a table's policy and type parsed; and the named commands a planning pass changes its table through."""
from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import inspect

from tms.db import TablePolicy, TableRecord, TableRepo, TaskRepo, records
from tms.db.models import (
    Alert,
    ApiToken,
    DiscoveredTable,
    Engine,
    Event,
    HealthRecord,
    HealthSample,
    Instance,
    Lease,
    Mute,
    PolicyTemplate,
    RegisteredTable,
    ResourceQueue,
    Rollout,
    ShadowRun,
    Task,
    TaskAttempt,
    Webhook,
    WebhookDelivery,
)
from tms.hudi.table.properties import TableType
from tms.table_service import TableService

RECORD_OF_ROW = {
    RegisteredTable: records.TableRecord, Task: records.TaskRecord, ResourceQueue: records.QueueRecord,
    Engine: records.EngineRecord, Rollout: records.RolloutRecord, Instance: records.InstanceRecord,
    Alert: records.AlertRecord, Mute: records.MuteRecord, PolicyTemplate: records.TemplateRecord,
    Event: records.EventRecord, TaskAttempt: records.AttemptRecord, Webhook: records.WebhookRecord,
    WebhookDelivery: records.DeliveryRecord, HealthRecord: records.HealthScore,
    HealthSample: records.HealthSampleRecord, ApiToken: records.TokenRecord, DiscoveredTable: records.DiscoveredRecord,
    ShadowRun: records.ShadowRunRecord, Lease: records.LeaseRecord,
}


@pytest.mark.parametrize("row", RECORD_OF_ROW, ids=lambda row: row.__name__)
def test_a_record_has_a_field_for_every_column_of_its_row(row):
    """A column added to a row and not to its record would be lost at the repositories' door."""
    columns = {c.key for c in inspect(row).column_attrs}
    assert {f.name for f in dataclasses.fields(RECORD_OF_ROW[row])} == columns


def test_a_table_comes_out_frozen_with_its_policy_and_type_parsed(db, table_id):
    with db.transaction() as session:
        TableRepo(session).update(table_id, policies={"hoodie.compact.inline.max.delta.commits": 3})
        table = TableRepo(session).get(table_id)
    assert isinstance(table, TableRecord) and table.table_type is TableType.MERGE_ON_READ and table.is_mor
    assert table.policy == TablePolicy.from_stored({"hoodie.compact.inline.max.delta.commits": 3})
    assert table.policy.max_delta_commits == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.enabled = False  # type: ignore[misc]
    with db.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table_id, service="clean", instant="20250101000000000")
    assert task.service is TableService.CLEAN


def test_a_pass_keeps_its_digest_and_times_through_named_commands(db, table_id):
    due = datetime.now(UTC) + timedelta(hours=1)
    with db.transaction() as session:
        tables = TableRepo(session)
        tables.store_digest(table_id, {"version": 1}, due)
        tables.store_timeline_stamp(table_id, "stamp-1")
        tables.mark_planned(table_id, due)
    with db.transaction() as session:
        stored = TableRepo(session).get(table_id)
    assert (stored.planner_state, stored.tick_due_at, stored.timeline_stamp, stored.planned_at) == \
        ({"version": 1}, due, "stamp-1", due)
    with db.transaction() as session:  # the same values again: the row is not rewritten
        TableRepo(session).store_digest(table_id, {"version": 1}, due)
        TableRepo(session).store_tick_due(table_id, due)
    with db.transaction() as session:
        assert TableRepo(session).get(table_id).updated_at == stored.updated_at
        TableRepo(session).store_digest(table_id, {}, None)
    with db.transaction() as session:
        forgotten = TableRepo(session).get(table_id)
    assert (forgotten.planner_state, forgotten.tick_due_at) == ({}, None)
    assert forgotten.updated_at != stored.updated_at
