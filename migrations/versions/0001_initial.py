"""Initial schema: tables and policies, events, tasks and attempts, queues, instances and leases,
alerts, alert blacklist, webhooks, API tokens.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_tokens',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('name', sa.Text(), nullable=False),
        sa.Column('role', sa.String(length=16), nullable=False),
        sa.Column('token_hash', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("role IN ('viewer', 'operator', 'admin')", name=op.f('ck_api_tokens_role')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
        sa.UniqueConstraint('token_hash', name=op.f('uq_api_tokens_token_hash'))
    )
    op.create_table('instances',
        sa.Column('id', sa.Text(), nullable=False),
        sa.Column('roles', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column('host', sa.Text(), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('version', sa.Text(), nullable=False),
        sa.Column('info', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('heartbeat_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_instances'))
    )
    op.create_table('leases',
        sa.Column('name', sa.Text(), nullable=False),
        sa.Column('holder', sa.Text(), nullable=True),
        sa.Column('epoch', sa.BigInteger(), server_default=sa.text('0'), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('acquired_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('name', name=op.f('pk_leases'))
    )
    op.create_table('queues',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('master', sa.Text(), nullable=False),
        sa.Column('spark_conf', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('capacity', sa.Integer(), server_default=sa.text('1'), nullable=False),
        sa.Column('executor_cores', sa.Integer(), server_default=sa.text('1'), nullable=False),
        sa.Column('min_executor_memory_mb', sa.Integer(), server_default=sa.text('512'), nullable=False),
        sa.Column('max_executor_memory_mb', sa.Integer(), server_default=sa.text('8192'), nullable=False),
        sa.Column('max_executors', sa.Integer(), server_default=sa.text('8'), nullable=False),
        sa.Column('reserved_for_priority', sa.Integer(), nullable=True),
        sa.Column('allowed_databases', postgresql.ARRAY(sa.Text()), nullable=True),
        sa.Column('allowed_tables', postgresql.ARRAY(sa.Text()), nullable=True),
        sa.Column('allowed_actions', postgresql.ARRAY(sa.Text()), nullable=True),
        sa.Column('enabled', sa.Boolean(), server_default=sa.text('true'), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.CheckConstraint("kind IN ('local', 'standalone', 'yarn', 'kubernetes')", name=op.f('ck_queues_kind')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_queues')),
        sa.UniqueConstraint('name', name=op.f('uq_queues_name'))
    )
    op.create_table('tables',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('base_path', sa.Text(), nullable=False),
        sa.Column('name', sa.Text(), nullable=False),
        sa.Column('database', sa.Text(), nullable=False),
        sa.Column('table_type', sa.String(length=16), nullable=False),
        sa.Column('table_version', sa.Integer(), nullable=False),
        sa.Column('record_key_fields', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column('partition_fields', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column('ordering_fields', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column('merge_mode', sa.String(length=32), nullable=True),
        sa.Column('properties', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('policies', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('enabled', sa.Boolean(), server_default=sa.text('true'), nullable=False),
        sa.Column('priority', sa.Integer(), server_default=sa.text('0'), nullable=False),
        sa.Column('queue', sa.Text(), nullable=True),
        sa.Column('callback_key_hash', sa.String(length=64), nullable=True),
        sa.Column('planner_state', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('planned_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.CheckConstraint("table_type IN ('COPY_ON_WRITE', 'MERGE_ON_READ')", name=op.f('ck_tables_table_type')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tables')),
        sa.UniqueConstraint('base_path', name=op.f('uq_tables_base_path'))
    )
    op.create_index(op.f('ix_tables_database_name'), 'tables', ['database', 'name'], unique=False)
    op.create_table('webhooks',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('url', sa.Text(), nullable=False),
        sa.Column('kinds', postgresql.ARRAY(sa.Text()), nullable=True),
        sa.Column('min_severity', sa.String(length=16), server_default='warning', nullable=False),
        sa.Column('secret', sa.Text(), nullable=True),
        sa.Column('enabled', sa.Boolean(), server_default=sa.text('true'), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.CheckConstraint("min_severity IN ('info', 'warning', 'critical')", name=op.f('ck_webhooks_min_severity')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_webhooks')),
        sa.UniqueConstraint('name', name=op.f('uq_webhooks_name'))
    )
    op.create_table('alert_blacklist',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('kind', sa.String(length=64), nullable=True),
        sa.Column('database', sa.Text(), nullable=True),
        sa.Column('table_id', sa.BigInteger(), nullable=True),
        sa.Column('reason', sa.Text(), server_default='', nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['table_id'], ['tables.id'], name=op.f('fk_alert_blacklist_table_id_tables'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_blacklist'))
    )
    op.create_table('events',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('table_id', sa.BigInteger(), nullable=False),
        sa.Column('instant', sa.String(length=17), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('completion_time', sa.String(length=17), nullable=True),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.Column('write_stats', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column('extra_metadata', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column('received_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('processed_at', sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("source IN ('hudi_callback', 'api')", name=op.f('ck_events_source')),
        sa.CheckConstraint("state IN ('requested', 'inflight', 'completed')", name=op.f('ck_events_state')),
        sa.ForeignKeyConstraint(['table_id'], ['tables.id'], name=op.f('fk_events_table_id_tables'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_events')),
        sa.UniqueConstraint('table_id', 'instant', 'action', 'state', name=op.f('uq_events_table_id_instant_action_state'))
    )
    op.create_index('ix_events_unprocessed', 'events', ['table_id', 'id'], unique=False, postgresql_where=sa.text('processed_at IS NULL'))
    op.create_table('tasks',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('table_id', sa.BigInteger(), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('instant', sa.String(length=17), nullable=False),
        sa.Column('target_instant', sa.String(length=17), nullable=True),
        sa.Column('state', sa.String(length=16), server_default='PENDING', nullable=False),
        sa.Column('version', sa.Integer(), server_default=sa.text('0'), nullable=False),
        sa.Column('attempt', sa.Integer(), server_default=sa.text('0'), nullable=False),
        sa.Column('priority', sa.Integer(), server_default=sa.text('0'), nullable=False),
        sa.Column('queue', sa.Text(), nullable=True),
        sa.Column('requested_resources', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('plan_stats', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('blockers', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column('lease_owner', sa.Text(), nullable=True),
        sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('fencing_token', sa.BigInteger(), server_default=sa.text('0'), nullable=False),
        sa.Column('spark_app_id', sa.Text(), nullable=True),
        sa.Column('run_after', sa.DateTime(timezone=True), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("state IN ('PENDING', 'BLOCKED', 'RUNNABLE', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SUSPENDED', 'CANCELLED')", name=op.f('ck_tasks_state')),
        sa.ForeignKeyConstraint(['table_id'], ['tables.id'], name=op.f('fk_tasks_table_id_tables'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tasks')),
        sa.UniqueConstraint('table_id', 'instant', name=op.f('uq_tasks_table_id_instant'))
    )
    op.create_index(op.f('ix_tasks_created_at'), 'tasks', ['created_at'], unique=False)
    op.create_index('ix_tasks_runnable', 'tasks', ['priority', 'id'], unique=False, postgresql_where=sa.text("state = 'RUNNABLE'"))
    op.create_index('ix_tasks_running_lease', 'tasks', ['lease_expires_at'], unique=False, postgresql_where=sa.text("state = 'RUNNING'"))
    op.create_index(op.f('ix_tasks_table_id_state'), 'tasks', ['table_id', 'state'], unique=False)
    op.create_table('alerts',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('kind', sa.String(length=64), nullable=False),
        sa.Column('severity', sa.String(length=16), nullable=False),
        sa.Column('table_id', sa.BigInteger(), nullable=True),
        sa.Column('task_id', sa.BigInteger(), nullable=True),
        sa.Column('message', sa.Text(), nullable=False),
        sa.Column('details', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('fingerprint', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("severity IN ('info', 'warning', 'critical')", name=op.f('ck_alerts_severity')),
        sa.ForeignKeyConstraint(['table_id'], ['tables.id'], name=op.f('fk_alerts_table_id_tables'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], name=op.f('fk_alerts_task_id_tasks'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_alerts'))
    )
    op.create_index(op.f('ix_alerts_created_at'), 'alerts', ['created_at'], unique=False)
    op.create_index('uq_alerts_open_fingerprint', 'alerts', ['fingerprint'], unique=True, postgresql_where=sa.text('resolved_at IS NULL'))
    op.create_table('task_attempts',
        sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column('task_id', sa.BigInteger(), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('fencing_token', sa.BigInteger(), nullable=False),
        sa.Column('worker', sa.Text(), nullable=False),
        sa.Column('queue', sa.Text(), nullable=True),
        sa.Column('requested_resources', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('spark_app_id', sa.Text(), nullable=True),
        sa.Column('outcome', sa.String(length=16), server_default='RUNNING', nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('log_tail', sa.Text(), nullable=True),
        sa.Column('started_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("outcome IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'LOST')", name=op.f('ck_task_attempts_outcome')),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], name=op.f('fk_task_attempts_task_id_tasks'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_task_attempts')),
        sa.UniqueConstraint('task_id', 'attempt', name=op.f('uq_task_attempts_task_id_attempt'))
    )


def downgrade() -> None:
    # Children first; indexes and constraints go with their tables.
    for table in ("task_attempts", "alerts", "tasks", "events", "alert_blacklist", "webhooks", "tables",
                  "queues", "leases", "instances", "api_tokens"):
        op.drop_table(table)
