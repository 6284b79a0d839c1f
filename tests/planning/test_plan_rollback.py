"""Rollback: detection of failed writes by Hudi's heartbeat rule (or age without a heartbeat), rollback
plans from markers (and without them), and failed compaction attempts."""
import os
import shutil
from datetime import UTC, datetime, timedelta

import pytest
from planning_support import ModelledTable, now, policy, rec, run_compaction, run_rollback

from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_rollback_plan
from tms.planning.compaction import plan_compaction
from tms.planning.errors import PlanningError
from tms.planning.failed_writes import find_failed_writes
from tms.planning.footprint import IOType, marker_files
from tms.planning.rollback import plan_failed_write_rollbacks, plan_rollback
from tms.planning.stats import plan_stats

NO_HEARTBEAT_AGE = 600


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _failed_write(tmp_path, table_type="MERGE_ON_READ", version=6) -> tuple[ModelledTable, str]:
    t = ModelledTable(tmp_path / "t", table_type=table_type, version=version)
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(0, 20)])
    failed = t.write([rec(0, 30, "failed"), rec(1, 30, "failed"), rec(9, 30, "failed")], leave_inflight=True)
    return t, failed


def _requests(t: ModelledTable, planned):
    return parse_rollback_plan(t.table().timeline.read_plan(planned.instant)).rollback_requests


def test_expired_heartbeat_is_a_failed_write_and_a_live_one_is_not(tmp_path):
    t, failed = _failed_write(tmp_path)
    beat = (t.path / ".hoodie" / ".heartbeat" / failed).stat().st_mtime
    rules = policy(tms__rollback__no__heartbeat__age__seconds=1)  # a live heartbeat overrides the age rule
    assert find_failed_writes(t.table(), rules, _at(beat + 119)) == []
    [found] = find_failed_writes(t.table(), rules, _at(beat + 121))  # 60 s x 2 misses, as Hudi decides
    assert found.instant.timestamp == failed and "heartbeat" in found.reason
    faster = policy(hoodie__client__heartbeat__interval_in_ms=1000, hoodie__client__heartbeat__tolerable__misses=3)
    assert [f.instant.timestamp for f in find_failed_writes(t.table(), faster, _at(beat + 4))] == [failed]


def test_write_without_heartbeat_fails_by_age_of_its_instant_files(tmp_path):
    t, failed = _failed_write(tmp_path)
    os.remove(t.path / ".hoodie" / ".heartbeat" / failed)
    touched = max(p.stat().st_mtime for p in (t.path / ".hoodie").glob(f"{failed}.*"))
    rules = policy(tms__rollback__no__heartbeat__age__seconds=NO_HEARTBEAT_AGE)
    assert find_failed_writes(t.table(), rules, _at(touched + NO_HEARTBEAT_AGE - 1)) == []
    [found] = find_failed_writes(t.table(), rules, _at(touched + NO_HEARTBEAT_AGE + 1))
    assert found.instant.timestamp == failed and "no heartbeat" in found.reason


def test_a_lazy_writers_write_whose_heartbeat_ended_fails_after_the_heartbeat_tolerance(tmp_path):
    """Multi-writer tables clean failed writes lazily: a writer deletes its heartbeat when its write client closes
    (after a write refused for a conflict too), and Hudi counts a missing heartbeat as expired. TMS waits the
    heartbeat tolerance after the instant's last file change (a write whose heartbeat has not begun yet), not the
    hour it gives writers that keep no heartbeat."""
    t, failed = _failed_write(tmp_path)
    os.remove(t.path / ".hoodie" / ".heartbeat" / failed)
    touched = max(p.stat().st_mtime for p in (t.path / ".hoodie").glob(f"{failed}.*"))
    rules = policy(tms__rollback__no__heartbeat__age__seconds=NO_HEARTBEAT_AGE)
    assert find_failed_writes(t.table(), rules, _at(touched + 119), lazy=True) == []
    [found] = find_failed_writes(t.table(), rules, _at(touched + 121), lazy=True)  # 60 s x 2 misses
    assert found.instant.timestamp == failed and "heartbeat ended" in found.reason
    assert find_failed_writes(t.table(), rules, _at(touched + 121)) == [], "an EAGER writer's write: the age rule"


def test_v6_merge_on_read_rollback_marks_appended_logs_and_deletes_new_base_files(tmp_path):
    t, failed = _failed_write(tmp_path)
    later = now() + timedelta(hours=1)
    [planned] = plan_failed_write_rollbacks(t.table(), policy(), later)
    assert plan_failed_write_rollbacks(t.table(), policy(), later) == [], "never planned twice"
    plan = parse_rollback_plan(t.table().timeline.read_plan(planned.instant))
    assert (plan.instant_to_rollback.commit_time, plan.instant_to_rollback.action) == (failed, "deltacommit")
    deleted = [p for r in plan.rollback_requests for p in r.files_to_be_deleted]
    marked = {p: size for r in plan.rollback_requests for p, size in r.log_blocks_to_be_deleted.items()}
    assert [BaseFileName.parse(p.rsplit("/", 1)[-1]).instant for p in deleted] == [failed]  # the new key 9
    assert len(marked) == 2 and all(LogFileName.parse(p).instant != failed for p in marked)
    assert all(size == os.path.getsize(p) for p, size in marked.items())
    base_request = next(r for r in plan.rollback_requests if r.files_to_be_deleted)
    assert (base_request.file_id, base_request.latest_base_instant) == ("", ""), "as Hudi 0.x writes it"
    log_request = next(r for r in plan.rollback_requests if r.log_blocks_to_be_deleted)
    assert log_request.file_id and log_request.latest_base_instant < failed
    assert planned.stats == plan_stats(t.table(), planned.instant) and planned.stats.operations == 3
    run_rollback(t.table(), planned.instant)
    t.pending.clear()
    assert t.table().timeline.get(failed) is None
    assert not (t.path / ".hoodie" / ".temp" / failed).exists()
    t.check()


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_v8_rollback_deletes_base_and_log_files(tmp_path, table_type):
    t, failed = _failed_write(tmp_path, table_type, 8)
    planned = plan_rollback(t.table(), failed)
    requests = _requests(t, planned)
    assert all(not r.log_blocks_to_be_deleted and len(r.files_to_be_deleted) == 1 for r in requests)
    names = [r.files_to_be_deleted[0].rsplit("/", 1)[-1] for r in requests]
    instants = [(LogFileName.parse(n) or BaseFileName.parse(n)).instant for n in names]
    assert instants == [failed] * 3
    run_rollback(t.table(), planned.instant)
    t.pending.clear()
    t.check()


def test_without_markers_the_files_are_found_by_listing_and_write_stats(tmp_path):
    t, failed = _failed_write(tmp_path)
    with_markers = {tuple(r.files_to_be_deleted) + tuple(r.log_blocks_to_be_deleted)
                    for r in _requests(t, plan_rollback(t.table(), failed))}
    t.table().timeline.delete_pending(t.table().timeline.pending(("rollback",))[0].timestamp)
    shutil.rmtree(t.path / ".hoodie" / ".temp" / failed)
    without = {tuple(r.files_to_be_deleted) + tuple(r.log_blocks_to_be_deleted)
               for r in _requests(t, plan_rollback(t.table(), failed))}
    assert without == with_markers


def test_timeline_server_markers_are_read(tmp_path):
    t, failed = _failed_write(tmp_path)
    folder = t.path / ".hoodie" / ".temp" / failed
    direct = sorted((f.path, f.io_type) for f in marker_files(t.table().storage, failed))
    shutil.rmtree(folder)
    folder.mkdir()
    (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    names = [f"{path}.marker.{kind.value}" for path, kind in direct]
    (folder / "MARKERS0").write_text("\n".join(names[:1]) + "\n")
    (folder / "MARKERS1").write_text("\n".join(names[1:]) + "\n")
    assert sorted((f.path, f.io_type) for f in marker_files(t.table().storage, failed)) == direct
    assert {kind for _, kind in direct} == {IOType.APPEND, IOType.CREATE}


def test_failed_compaction_attempt_rolls_back_only_its_base_files(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6)
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(0, 20), rec(1, 20)])
    tc = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now()).instant
    t.write([rec(0, 30)])  # a log file named Tc: a completed write's, never to be touched
    table = t.table()
    with pytest.raises(PlanningError, match="requested"):
        plan_rollback(table, tc)
    table.timeline.transition_to_inflight(table.timeline.states_of(tc)[State.REQUESTED])
    planned_group = next(g for g in table.file_system_view().file_groups() if len(g.slices) == 2)
    partial = f"{planned_group.partition}/{BaseFileName(planned_group.file_id, '0-1-0', tc)}"
    (t.path / partial).write_bytes(b"PAR1 partial")
    marker = t.path / ".hoodie" / ".temp" / tc / f"{partial}.marker.CREATE"
    marker.parent.mkdir(parents=True)
    marker.touch()
    planned = plan_rollback(t.table(), tc)
    assert [r.files_to_be_deleted for r in _requests(t, planned)] == [[f"{t.table().base_path}/{partial}"]]
    run_rollback(t.table(), planned.instant)
    assert set(t.table().timeline.states_of(tc)) == {State.REQUESTED}, "back to requested, ready for a retry"
    assert not (t.path / partial).exists()
    run_compaction(t.table(), tc)
    t.check()


def test_completed_and_unknown_instants_are_refused(tmp_path):
    t, _ = _failed_write(tmp_path)
    done = t.table().timeline.completed()[-1].timestamp
    with pytest.raises(PlanningError, match="completed"):
        plan_rollback(t.table(), done)
    with pytest.raises(PlanningError, match="no instant"):
        plan_rollback(t.table(), "20000101000000000")
