"""An engine's kind: `tms` (TMS's job code on the engine's Spark) or `hudi` (Hudi's own Spark SQL procedures
execute the instant TMS planned, on the engine's Spark with Hudi's bundle).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("engines", sa.Column("kind", sa.String(length=16), server_default=sa.text("'tms'"),
                                       nullable=False))
    op.create_check_constraint("kind", "engines", "kind IN ('tms', 'hudi')")


def downgrade() -> None:
    op.drop_constraint("kind", "engines", type_="check")
    op.drop_column("engines", "kind")
