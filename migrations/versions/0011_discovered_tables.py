"""Discovery: the Hudi tables found under the storage roots, registered, refused (with the reason) or missing
(registered once and gone from storage since: disabled, never deleted).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "discovered_tables",
        sa.Column("base_path", sa.Text(), nullable=False),
        sa.Column("root", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("table_id", sa.BigInteger(), nullable=True),
        sa.Column("first_seen_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("last_seen_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("state IN ('registered', 'refused', 'missing')", name=op.f("ck_discovered_tables_state")),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"], name=op.f("fk_discovered_tables_table_id_tables"),
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("base_path", name=op.f("pk_discovered_tables")),
    )
    op.create_index(op.f("ix_discovered_tables_root_state"), "discovered_tables", ["root", "state"])


def downgrade() -> None:
    op.drop_table("discovered_tables")
