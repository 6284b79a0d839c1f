"""Shadow canaries: a rollout rule may run its canary engine in shadow (`rollouts.shadow`), on a scratch copy of
the plan's file slices and timeline, beside the stable engine whose result alone is committed; each comparison
of the two results is a row of `shadow_runs`.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rollouts", sa.Column("shadow", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    op.create_table(
        "shadow_runs",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("task_id", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("rollout", sa.String(length=64), nullable=False),
        sa.Column("canary_engine", sa.String(length=64), nullable=False),
        sa.Column("stable_engine", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("first_differing_key", sa.Text(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("groups", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"),
                  nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("outcome IN ('agreed', 'differed', 'failed')", name=op.f("ck_shadow_runs_outcome")),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name=op.f("fk_shadow_runs_task_id_tasks"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_shadow_runs")),
    )
    op.create_index(op.f("ix_shadow_runs_rollout_created_at"), "shadow_runs", ["rollout", "created_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_shadow_runs_rollout_created_at"), table_name="shadow_runs")
    op.drop_table("shadow_runs")
    op.drop_column("rollouts", "shadow")
