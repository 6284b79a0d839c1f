"""The planner's reading of a table finds the files its latest commits wrote that storage lost: `table_damaged`
fires naming them, the table's health drops while it fires, and it resolves once the files are back."""
from datetime import UTC, datetime

from planner_db_support import TrackedTable, planner
from planning_support import rec

from tms.db import AlertRepo
from tms.fleet.health import score_tables
from tms.hudi.table.lost_files import written_files

EVERY_3 = {"hoodie.compact.inline.max.delta.commits": 3}


def _damaged_alerts(db, table_id):
    with db.transaction() as session:
        return AlertRepo(session).find(table_id=table_id, kind="table_damaged")[0]


def _latest_base_file(t):
    table = t.table()
    latest = table.timeline.completed_writes()[-1].timestamp
    return next(f.path for f in written_files(table) if f.instant == latest and not f.is_log)


def test_a_lost_base_file_of_the_latest_commit_raises_table_damaged_and_lowers_health(db, tmp_path):
    t = TrackedTable(db, tmp_path / "t", policies=EVERY_3)
    p = planner(db)
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(i, 10) for i in range(6, 9)], "insert")  # new file groups: base files of the latest commit
    assert p.reconcile(t.id) and _damaged_alerts(db, t.id) == []
    healthy = score_tables(db, [t.id], datetime.now(UTC), clean_commits=1000, orphan_safety_seconds=86400)[t.id]
    assert [r.kind for r in healthy.reasons if r.kind == "damaged_files"] == []

    victim = _latest_base_file(t)
    data = (tmp_path / "t" / victim).read_bytes()
    (tmp_path / "t" / victim).unlink()
    assert p.reconcile(t.id)
    [alert] = _damaged_alerts(db, t.id)
    assert (alert.severity, alert.subject, alert.resolved_at) == ("critical", f"table:{t.id}", None)
    assert victim in alert.message and alert.details["files"] == [victim]
    health = score_tables(db, [t.id], datetime.now(UTC), clean_commits=1000, orphan_safety_seconds=86400)[t.id]
    assert health.status == "warning" and health.score <= healthy.score - 60
    assert [r.kind for r in health.reasons if r.kind == "damaged_files"] == ["damaged_files"]

    # A planning pass (the third delta commit makes a compaction due) looks too: the alert counts it.
    t.write([rec(i, 20) for i in range(3)])
    assert p.handle_events(t.id)
    [alert] = _damaged_alerts(db, t.id)
    assert alert.count >= 2 and alert.resolved_at is None

    (tmp_path / "t" / victim).write_bytes(data)  # restored from a backup
    assert p.reconcile(t.id)
    [alert] = _damaged_alerts(db, t.id)
    assert alert.resolved_at is not None
    restored = score_tables(db, [t.id], datetime.now(UTC), clean_commits=1000, orphan_safety_seconds=86400)[t.id]
    assert [r.kind for r in restored.reasons if r.kind == "damaged_files"] == []
