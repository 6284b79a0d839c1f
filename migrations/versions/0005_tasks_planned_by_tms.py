"""Tasks record whether TMS wrote their plan (the planner) or adopted it (a writer's plan, or one left by a
crash between writing a plan and recording its task): only the plans TMS wrote are TMS's to roll back
when they can no longer run.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tasks", sa.Column("planned_by_tms", sa.Boolean(), server_default=sa.text("false"),
                                     nullable=False))


def downgrade() -> None:
    op.drop_column("tasks", "planned_by_tms")
