"""A farm of registered tables for the scale suite and `bench/scale.py`: small real Hudi tables (their
`hoodie.properties` and an empty timeline folder, written directly: thousands in seconds), registered in
bulk through the repos, with tasks, events and alerts in the proportions of a busy deployment."""
from __future__ import annotations

import os
import time
from pathlib import Path

from sqlalchemy import text

from service.table_view import registration_facts
from tms.db import Database, TableRepo
from tms.hudi.table.hudi_table import PROPERTIES, HudiTable

PROPS = {"hoodie.table.name": "t", "hoodie.database.name": "scale", "hoodie.table.type": "MERGE_ON_READ",
         "hoodie.table.version": "8", "hoodie.table.recordkey.fields": "id",
         "hoodie.table.partition.fields": "city", "hoodie.table.ordering.fields": "ts",
         "hoodie.table.keygenerator.type": "SIMPLE"}
AGE_SECONDS = 3600  # the folders' mtimes are set this far back: past the timeline stamp's racy window


def template(root: Path) -> tuple[bytes, str, dict]:
    """A table made by the library: its properties file, timeline folder and registration facts."""
    table = HudiTable.create(str(root / "template"), PROPS)
    return table.storage.read_bytes(PROPERTIES), table.config.timeline_dir, registration_facts(table)


def make_tables(root: Path, count: int, *, start: int = 0) -> tuple[list[str], dict]:
    """`count` tables under `root` (their folders aged AGE_SECONDS); their base paths and the facts to
    register them with."""
    properties, timeline_dir, facts = template(root)
    past = time.time() - AGE_SECONDS
    paths = []
    for i in range(start, start + count):
        base = root / f"db{i % 100}" / f"t{i}"
        os.makedirs(base / timeline_dir)
        (base / PROPERTIES).write_bytes(properties)
        for folder in (base / timeline_dir, base / ".hoodie"):
            os.utime(folder, (past, past))
        paths.append(str(base))
    return paths, facts


def register(db: Database, paths: list[str], facts: dict, chunk: int = 5000) -> list[int]:
    """Register the tables in bulk; their ids."""
    ids: list[int] = []
    for at in range(0, len(paths), chunk):
        rows = [{**facts, "base_path": p, "name": Path(p).name, "database": Path(p).parent.name}
                for p in paths[at:at + chunk]]
        with db.transaction() as session:
            ids += TableRepo(session).register_many(rows)
    return ids


def fill_history(db: Database, *, tasks_per_table: int, events_per_table: int, alert_share: float = 0.1) -> None:
    """Tasks (nearly all SUCCEEDED, a few RUNNABLE, FAILED, RUNNING), processed events and resolved
    alerts for every registered table, made by the database (generate_series), then ANALYZEd."""
    with db.transaction() as session:
        session.execute(text("""
            INSERT INTO tasks (table_id, service, instant, state, priority, queue, created_at)
            SELECT t.id, CASE WHEN n % 3 = 0 THEN 'clean' ELSE 'compaction' END,
                   to_char(timestamp '2026-01-01' + (t.id * 1000 + n) * interval '1 second', 'YYYYMMDDHH24MISS')
                       || '000',
                   CASE WHEN n = 0 AND t.id % 50 = 0 THEN 'RUNNABLE' WHEN n = 0 AND t.id % 97 = 0 THEN 'FAILED'
                        WHEN n = 0 AND t.id % 89 = 0 THEN 'RUNNING' ELSE 'SUCCEEDED' END,
                   t.id % 3, 'local', now() - (n * interval '1 hour')
            FROM tables t, generate_series(0, :n - 1) AS n"""), {"n": tasks_per_table})
        session.execute(text("""
            INSERT INTO events (table_id, instant, action, state, source, processed_at)
            SELECT t.id,
                   to_char(timestamp '2026-01-01' + (t.id * 1000 + n) * interval '1 second', 'YYYYMMDDHH24MISS')
                       || '001',
                   'deltacommit', 'completed', 'api', now()
            FROM tables t, generate_series(0, :n - 1) AS n"""), {"n": events_per_table})
        session.execute(text("""
            INSERT INTO alerts (kind, severity, subject, table_id, message, fingerprint, resolved_at)
            SELECT 'table_unreadable', 'warning', 'table:' || t.id, t.id, 'cannot plan', 'f:' || t.id,
                   CASE WHEN t.id % 10 = 0 THEN NULL ELSE now() END
            FROM tables t WHERE random() < :share"""), {"share": alert_share})
    analyze(db)


def analyze(db: Database) -> None:
    with db.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
