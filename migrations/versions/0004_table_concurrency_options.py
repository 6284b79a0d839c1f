"""The table's concurrency-control options (hoodie.write.lock.*, hoodie.write.concurrency.mode): TMS takes the
writers' lock with them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tables", sa.Column("concurrency_options", postgresql.JSONB(astext_type=sa.Text()),
                                      server_default=sa.text("'{}'::jsonb"), nullable=False))


def downgrade() -> None:
    op.drop_column("tables", "concurrency_options")
