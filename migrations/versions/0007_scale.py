"""Scale: indexes for the hot queries at 100,000 tables (the claim's order, a state's tasks, a table's
alerts, the periodic planning requests) and the timeline stamp the scan compares.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_RUNNABLE = sa.text("state = 'RUNNABLE'")


def upgrade() -> None:
    op.add_column("tables", sa.Column("timeline_stamp", sa.Text(), nullable=True))
    op.create_index("ix_tables_tick_requested", "tables", ["tick_requested_at"],
                    postgresql_where=sa.text("tick_requested_at IS NOT NULL"))
    op.create_index("ix_tables_scan_requested", "tables", ["scan_requested_at"],
                    postgresql_where=sa.text("scan_requested_at IS NOT NULL"))
    op.drop_index("ix_tasks_runnable", table_name="tasks")
    op.create_index("ix_tasks_runnable", "tasks", [sa.text("priority DESC"), "id"], postgresql_where=_RUNNABLE)
    op.create_index("ix_tasks_state_id", "tasks", ["state", "id"])
    op.create_index("ix_alerts_table_id_id", "alerts", ["table_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_alerts_table_id_id", table_name="alerts")
    op.drop_index("ix_tasks_state_id", table_name="tasks")
    op.drop_index("ix_tasks_runnable", table_name="tasks")
    op.create_index("ix_tasks_runnable", "tasks", ["priority", "id"], postgresql_where=_RUNNABLE)
    op.drop_index("ix_tables_scan_requested", table_name="tables")
    op.drop_index("ix_tables_tick_requested", table_name="tables")
    op.drop_column("tables", "timeline_stamp")
