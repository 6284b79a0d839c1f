"""Retention: the indexes the manager's leader's purge of TMS's own history needs (manager/retention.py) — the
oldest events and webhook deliveries first, and the rows a deleted task's or alert's foreign keys look up
(without them each deleted row would scan its children's table).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""
from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_INDEXES = [
    ("ix_events_received_at", "events", ["received_at"]),
    ("ix_alerts_task_id", "alerts", ["task_id"]),
    ("ix_shadow_runs_task_id", "shadow_runs", ["task_id"]),
    ("ix_webhook_deliveries_alert_id", "webhook_deliveries", ["alert_id"]),
    ("ix_webhook_deliveries_created_at", "webhook_deliveries", ["created_at"]),
]


def upgrade() -> None:
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _ in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
