"""Warm engines: a queue's warm engine settings, and the engine an attempt ran on (warm or dedicated).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("queues", sa.Column("warm_engine_enabled", sa.Boolean(), server_default=sa.text("false"),
                                      nullable=False))
    op.add_column("queues", sa.Column("warm_engine_executors", sa.Integer(), server_default=sa.text("2"),
                                      nullable=False))
    op.add_column("queues", sa.Column("warm_engine_executor_memory_mb", sa.Integer(),
                                      server_default=sa.text("1024"), nullable=False))
    op.add_column("queues", sa.Column("warm_engine_executor_cores", sa.Integer(), server_default=sa.text("1"),
                                      nullable=False))
    op.add_column("task_attempts", sa.Column("engine_kind", sa.String(length=16), nullable=True))


def downgrade() -> None:
    op.drop_column("task_attempts", "engine_kind")
    for column in ("warm_engine_executor_cores", "warm_engine_executor_memory_mb", "warm_engine_executors",
                   "warm_engine_enabled"):
        op.drop_column("queues", column)
