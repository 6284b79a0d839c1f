"""Engines and rollouts: registered execution engines (Spark, job code version, confs), rollout rules with a
canary, and the engine (and rollout) recorded on each task attempt.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "engines",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("spark_home", sa.Text(), nullable=True),
        sa.Column("spark_submit", sa.Text(), nullable=True),
        sa.Column("pyspark_version", sa.Text(), nullable=True),
        sa.Column("code_version", sa.Text(), nullable=False),
        sa.Column("code_path", sa.Text(), nullable=False),
        sa.Column("spark_conf", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"),
                  nullable=False),
        sa.Column("created_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_engines")),
        sa.UniqueConstraint("name", name=op.f("uq_engines_name")),
    )
    op.create_table(
        "rollouts",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("queue", sa.Text(), nullable=True),
        sa.Column("database", sa.Text(), nullable=True),
        sa.Column("table_name", sa.Text(), nullable=True),
        sa.Column("stable_engine", sa.String(length=64), nullable=False),
        sa.Column("canary_engine", sa.String(length=64), nullable=True),
        sa.Column("canary_percent", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("failure_margin", sa.Float(), server_default=sa.text("0.2"), nullable=False),
        sa.Column("min_tasks", sa.Integer(), server_default=sa.text("5"), nullable=False),
        sa.Column("state", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("rolled_back_at", _TS, nullable=True),
        sa.Column("rollback_reason", sa.Text(), nullable=True),
        sa.Column("since", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("created_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("state IN ('active', 'rolled_back')", name=op.f("ck_rollouts_state")),
        sa.CheckConstraint("canary_percent BETWEEN 0 AND 100", name=op.f("ck_rollouts_canary_percent")),
        sa.ForeignKeyConstraint(["stable_engine"], ["engines.name"], name=op.f("fk_rollouts_stable_engine_engines"),
                                ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["canary_engine"], ["engines.name"], name=op.f("fk_rollouts_canary_engine_engines"),
                                ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rollouts")),
        sa.UniqueConstraint("name", name=op.f("uq_rollouts_name")),
    )
    op.add_column("task_attempts", sa.Column("engine", sa.String(length=64), nullable=True))
    op.add_column("task_attempts", sa.Column("rollout", sa.String(length=64), nullable=True))
    op.create_index(op.f("ix_task_attempts_rollout_started_at"), "task_attempts", ["rollout", "started_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_task_attempts_rollout_started_at"), table_name="task_attempts")
    op.drop_column("task_attempts", "rollout")
    op.drop_column("task_attempts", "engine")
    op.drop_table("rollouts")
    op.drop_table("engines")
