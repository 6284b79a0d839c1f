"""Health over time: each score the manager's leader takes of a table is also kept as a sample (its score and
status, pending log bytes and files, the age of its oldest uncompacted delta commit) for the fleet's and the
table's trend charts, for TMS_HEALTH_HISTORY_DAYS.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "health_samples",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("table_id", sa.BigInteger(), nullable=False),
        sa.Column("sampled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("log_bytes", sa.BigInteger(), nullable=True),
        sa.Column("log_files", sa.Integer(), nullable=True),
        sa.Column("oldest_uncompacted_seconds", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"], name=op.f("fk_health_samples_table_id_tables"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_health_samples")),
    )
    op.create_index(op.f("ix_health_samples_sampled_at"), "health_samples", ["sampled_at"])
    op.create_index(op.f("ix_health_samples_table_id_sampled_at"), "health_samples", ["table_id", "sampled_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_health_samples_table_id_sampled_at"), table_name="health_samples")
    op.drop_index(op.f("ix_health_samples_sampled_at"), table_name="health_samples")
    op.drop_table("health_samples")
