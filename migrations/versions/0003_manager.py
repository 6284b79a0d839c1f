"""The manager: the leader's last periodic run, retry columns on tasks, periodic planning requests and an
owner on tables, alerts with subject/count/last seen/muted, mutes (replacing alert_blacklist), webhook
formats and the webhook outbox.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("leases", sa.Column("last_work_at", _TS, nullable=True))

    op.add_column("tables", sa.Column("owner", sa.Text(), nullable=True))
    op.add_column("tables", sa.Column("tick_requested_at", _TS, nullable=True))
    op.add_column("tables", sa.Column("scan_requested_at", _TS, nullable=True))

    op.add_column("tasks", sa.Column("failure_kind", sa.String(length=32), nullable=True))
    op.add_column("tasks", sa.Column("retryable", sa.Boolean(), nullable=True))
    op.add_column("tasks", sa.Column("retry_reason", sa.Text(), nullable=True))
    op.add_column("tasks", sa.Column("next_attempt_at", _TS, nullable=True))
    op.add_column("tasks", sa.Column("retry_series_start", sa.Integer(), server_default=sa.text("0"),
                                     nullable=False))
    op.add_column("tasks", sa.Column("memory_factor", sa.Float(), server_default=sa.text("1.0"), nullable=False))
    op.create_index("ix_tasks_retry_due", "tasks", ["next_attempt_at"], postgresql_where=sa.text("state = 'FAILED'"))

    op.add_column("alerts", sa.Column("subject", sa.Text(), server_default="", nullable=False))
    op.add_column("alerts", sa.Column("count", sa.Integer(), server_default=sa.text("1"), nullable=False))
    op.add_column("alerts", sa.Column("muted", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    op.add_column("alerts", sa.Column("last_seen", _TS, server_default=sa.text("now()"), nullable=False))

    op.drop_table("alert_blacklist")
    op.create_table(
        "mutes",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("table_id", sa.BigInteger(), nullable=True),
        sa.Column("database", sa.Text(), nullable=True),
        sa.Column("owner", sa.Text(), nullable=True),
        sa.Column("queue", sa.Text(), nullable=True),
        sa.Column("alert_types", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", _TS, nullable=True),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"], name=op.f("fk_mutes_table_id_tables"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mutes")),
    )

    op.drop_constraint("uq_webhooks_name", "webhooks", type_="unique")
    op.alter_column("webhooks", "name", existing_type=sa.String(length=64), nullable=True)
    op.add_column("webhooks", sa.Column("format", sa.String(length=16), server_default="json", nullable=False))
    op.create_check_constraint(op.f("ck_webhooks_format"), "webhooks", "format IN ('json', 'slack')")
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("webhook_id", sa.BigInteger(), nullable=False),
        sa.Column("alert_id", sa.BigInteger(), nullable=False),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), server_default="pending", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("attempt_log", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"),
                  nullable=False),
        sa.Column("next_attempt_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("created_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("delivered_at", _TS, nullable=True),
        sa.CheckConstraint("state IN ('pending', 'delivered', 'expired')", name=op.f("ck_webhook_deliveries_state")),
        sa.CheckConstraint("event IN ('firing', 'resolved')", name=op.f("ck_webhook_deliveries_event")),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"], name=op.f("fk_webhook_deliveries_webhook_id_webhooks"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["alert_id"], ["alerts.id"], name=op.f("fk_webhook_deliveries_alert_id_alerts"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index("ix_webhook_deliveries_pending", "webhook_deliveries", ["next_attempt_at"],
                    postgresql_where=sa.text("state = 'pending'"))
    op.create_index(op.f("ix_webhook_deliveries_webhook_id_id"), "webhook_deliveries", ["webhook_id", "id"])


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_constraint(op.f("ck_webhooks_format"), "webhooks", type_="check")
    op.drop_column("webhooks", "format")
    op.execute("DELETE FROM webhooks WHERE name IS NULL")
    op.alter_column("webhooks", "name", existing_type=sa.String(length=64), nullable=False)
    op.create_unique_constraint("uq_webhooks_name", "webhooks", ["name"])
    op.drop_table("mutes")
    op.create_table(
        "alert_blacklist",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=True),
        sa.Column("database", sa.Text(), nullable=True),
        sa.Column("table_id", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", _TS, server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", _TS, nullable=True),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"], name=op.f("fk_alert_blacklist_table_id_tables"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_blacklist")),
    )
    for column in ("last_seen", "muted", "count", "subject"):
        op.drop_column("alerts", column)
    op.drop_index("ix_tasks_retry_due", table_name="tasks")
    for column in ("memory_factor", "retry_series_start", "next_attempt_at", "retry_reason", "retryable",
                   "failure_kind"):
        op.drop_column("tasks", column)
    for column in ("scan_requested_at", "tick_requested_at", "owner"):
        op.drop_column("tables", column)
    op.drop_column("leases", "last_work_at")
