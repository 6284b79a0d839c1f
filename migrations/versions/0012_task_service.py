"""One vocabulary: a task's table service is `service` (was `action`, the word Hudi's timeline uses for its
instants), and a queue's restriction is `allowed_services`.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.alter_column("tasks", "action", new_column_name="service")
    op.alter_column("queues", "allowed_actions", new_column_name="allowed_services")


def downgrade() -> None:
    op.alter_column("queues", "allowed_services", new_column_name="allowed_actions")
    op.alter_column("tasks", "service", new_column_name="action")
