"""The fence key of a task attempt: its job proves with it who asks whether the attempt still holds the lease.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("task_attempts", sa.Column("fence_key_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("task_attempts", "fence_key_hash")
