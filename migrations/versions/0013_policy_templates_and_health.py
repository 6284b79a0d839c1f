"""Policy templates and table health. Templates: rules by database, table-name pattern or path prefix giving tables their policies, queue,
priority and lock options; each table keeps its own settings apart (`own_settings`) from the effective ones its
columns hold, and the name of the template that applied. Health: each table's last score and its reasons.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "policy_templates",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("database", sa.Text(), nullable=True),
        sa.Column("name_pattern", sa.Text(), nullable=True),
        sa.Column("path_prefix", sa.Text(), nullable=True),
        sa.Column("policies", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"),
                  nullable=False),
        sa.Column("queue", sa.Text(), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=True),
        sa.Column("created_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_templates")),
        sa.UniqueConstraint("name", name=op.f("uq_policy_templates_name")),
    )
    op.create_table(
        "table_health",
        sa.Column("table_id", sa.BigInteger(), nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reasons", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"),
                  nullable=False),
        sa.Column("checked_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"], name=op.f("fk_table_health_table_id_tables"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("table_id", name=op.f("pk_table_health")),
    )
    op.create_index(op.f("ix_table_health_score_table_id"), "table_health", ["score", "table_id"])
    op.add_column("tables", sa.Column("own_settings", postgresql.JSONB(astext_type=sa.Text()),
                                      server_default=sa.text("'{}'::jsonb"), nullable=False))
    op.add_column("tables", sa.Column("template", sa.Text(), nullable=True))
    # Every setting a table has so far is its own (there were no templates): a queue when one is set, a priority
    # other than the default.
    op.execute("""
        UPDATE tables SET own_settings = jsonb_build_object('policies', policies,
                                                            'concurrency_options', concurrency_options)
            || CASE WHEN queue IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('queue', queue) END
            || CASE WHEN priority = 0 THEN '{}'::jsonb ELSE jsonb_build_object('priority', priority) END
    """)


def downgrade() -> None:
    op.drop_column("tables", "template")
    op.drop_column("tables", "own_settings")
    op.drop_table("table_health")
    op.drop_table("policy_templates")
