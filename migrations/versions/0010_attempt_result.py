"""An attempt's result record: what its job reported (the instant it completed, files and bytes written),
read from the job's output as it comes instead of from its log's tail.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("task_attempts", sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=True))


def downgrade() -> None:
    op.drop_column("task_attempts", "result")
