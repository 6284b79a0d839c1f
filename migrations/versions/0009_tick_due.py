"""The periodic trigger and the scan cost what is due: a table's `tick_due_at` (when time alone makes the
periodic trigger find work on it, indexed where set) and the leader's scan requests as chunks of table ids
(`scan_requests`) instead of a mark on every table (`scan_requested_at` goes).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("tables", sa.Column("tick_due_at", _TS, nullable=True))
    op.execute("UPDATE tables SET tick_due_at = now()")  # the first periodic trigger re-evaluates them all
    op.create_index("ix_tables_tick_due", "tables", ["tick_due_at", "id"],
                    postgresql_where=sa.text("tick_due_at IS NOT NULL"))
    op.drop_index("ix_tables_scan_requested", table_name="tables")
    op.drop_column("tables", "scan_requested_at")
    op.create_table(
        "scan_requests",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("first_table_id", sa.BigInteger(), nullable=False),
        sa.Column("last_table_id", sa.BigInteger(), nullable=False),
        sa.Column("requested_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scan_requests")),
    )


def downgrade() -> None:
    op.drop_table("scan_requests")
    op.add_column("tables", sa.Column("scan_requested_at", _TS, nullable=True))
    op.create_index("ix_tables_scan_requested", "tables", ["scan_requested_at"],
                    postgresql_where=sa.text("scan_requested_at IS NOT NULL"))
    op.drop_index("ix_tables_tick_due", table_name="tables")
    op.drop_column("tables", "tick_due_at")
