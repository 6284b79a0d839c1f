"""Invariant 3: a compaction planned while delta commits before it are in flight. v6 holds the plan and
syncs it with the late commits' log files; v8 needs neither. Proven with real files and hudi-rs."""
import pytest
from planning_support import ModelledTable, now, policy, rec, run_compaction, run_rollback

from tms.hudi.fs_view.file_names import LogFileName
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_compaction_plan, parse_rollback_plan
from tms.planning.compaction import plan_compaction
from tms.planning.compensation import BLOCKERS_KEY, sync_held_plan, sync_held_plans
from tms.planning.errors import CompensationError
from tms.planning.rollback import plan_rollback

EVERY_COMMIT = policy(hoodie__compact__inline__max__delta__commits=1)


def _plan_files(table, tc) -> dict[str, list[str]]:
    plan = parse_compaction_plan(table.timeline.read_plan(tc))
    return {op.partition_path: op.delta_file_paths for op in plan.operations}


def _logs_of(t: ModelledTable, instant: str) -> dict[str, list[str]]:
    """city partition -> names of the log files a write left (from its inflight or completed stats)."""
    table = t.table()
    inst = table.timeline.get(instant)
    stats = table.timeline.commit_metadata(inst).write_stats()
    return {s.partition_path: s.log_files for s in stats if s.log_files}


def _history(t: ModelledTable) -> tuple[str, str]:
    """Three file groups (one per city), each with a completed log file; then dc1 and dc2 left in flight,
    each writing a new log file into the slice about to be compacted."""
    t.write([rec(i, 10) for i in range(9)], "insert")
    t.write([rec(i, 20) for i in range(3)])                           # dc0: one log file per file group
    dc1 = t.write([rec(0, 30, "late"), rec(3, 30, "late")], leave_inflight=True)   # sf
    dc2 = t.write([rec(1, 30, "doomed")], leave_inflight=True)                    # nyc
    return dc1, dc2


def test_v6_plan_is_held_synced_with_late_commits_and_runnable_when_all_resolved(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6, new_log_file_per_commit=True)
    dc1, dc2 = _history(t)
    late, doomed = _logs_of(t, dc1)["city=sf"], _logs_of(t, dc2)["city=nyc"]

    planned = plan_compaction(t.table(), EVERY_COMMIT, now())
    tc = planned.instant
    assert planned.blockers == (dc1, dc2) and not planned.runnable
    table = t.table()
    files = _plan_files(table, tc)
    assert set(files) == {"city=sf", "city=nyc", "city=sp"}
    assert not set(late) & set(files["city=sf"]) and not set(doomed) & set(files["city=nyc"])
    assert parse_compaction_plan(table.timeline.read_plan(tc)).extra_metadata[BLOCKERS_KEY] == f"{dc1},{dc2}"
    assert plan_compaction(t.table(), EVERY_COMMIT, now()) is None, "file groups of a pending plan: never again"

    dc3 = t.write([rec(6, 40), rec(5, 40)])  # after Tc: into the new slice
    assert dc3 > tc and all(LogFileName.parse(n).instant == tc for names in _logs_of(t, dc3).values() for n in names)
    assert sync_held_plan(t.table(), tc) == [dc1, dc2] and _plan_files(t.table(), tc) == files

    t.complete(dc1)
    assert sync_held_plan(t.table(), tc) == [dc2]
    synced = _plan_files(t.table(), tc)
    assert set(late) <= set(synced["city=sf"]), "dc1's log file of the compacted slice joined the plan"
    assert all(LogFileName.parse(n).instant < tc for n in synced["city=sf"])
    op = next(op for op in parse_compaction_plan(t.table().timeline.read_plan(tc)).operations
              if op.partition_path == "city=sf")
    assert op.metrics["TOTAL_LOG_FILES"] == len(op.delta_file_paths) == 2

    rollback = plan_rollback(t.table(), dc2)
    request = parse_rollback_plan(t.table().timeline.read_plan(rollback.instant)).rollback_requests
    assert [list(r.log_blocks_to_be_deleted) for r in request] == [[f"{t.table().base_path}/city=nyc/{doomed[0]}"]]
    run_rollback(t.table(), rollback.instant)
    t.pending.pop(dc2)

    assert sync_held_plans(t.table()) == {tc: []}, "runnable: every blocker resolved"
    final = _plan_files(t.table(), tc)
    assert set(late) <= set(final["city=sf"]) and not set(doomed) & set(final["city=nyc"])
    assert BLOCKERS_KEY not in parse_compaction_plan(t.table().timeline.read_plan(tc)).extra_metadata

    run_compaction(t.table(), tc)
    t.check()  # dc1's late rows survive the compaction; dc2's never show
    names = {r["name"] for r in t.model.expected()}
    assert "late" in names and "doomed" not in names


def test_v8_plan_takes_only_logs_completed_before_it_and_is_never_held(tmp_path):
    t = ModelledTable(tmp_path / "t", version=8)
    dc1, dc2 = _history(t)
    planned = plan_compaction(t.table(), EVERY_COMMIT, now())
    tc = planned.instant
    assert planned.blockers == () and planned.runnable
    files = _plan_files(t.table(), tc)
    assert all(LogFileName.parse(n).instant not in (dc1, dc2) for names in files.values() for n in names)

    t.write([rec(6, 40), rec(5, 40)])
    t.complete(dc1)  # completes after Tc: its log file belongs to the slice the compaction opens
    rollback = plan_rollback(t.table(), dc2)
    deleted = [p for r in parse_rollback_plan(t.table().timeline.read_plan(rollback.instant)).rollback_requests
               for p in r.files_to_be_deleted]
    assert len(deleted) == 1 and LogFileName.parse(deleted[0]).instant == dc2
    run_rollback(t.table(), rollback.instant)
    t.pending.pop(dc2)
    assert sync_held_plan(t.table(), tc) == [] and _plan_files(t.table(), tc) == files

    run_compaction(t.table(), tc)
    t.check()


def test_a_held_plan_that_went_inflight_is_not_touched_and_raises(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6, new_log_file_per_commit=True)
    dc1, _ = _history(t)
    tc = plan_compaction(t.table(), EVERY_COMMIT, now()).instant
    table = t.table()
    table.timeline.transition_to_inflight(table.timeline.states_of(tc)[State.REQUESTED])
    before = table.timeline.read_plan(tc)
    t.complete(dc1)
    with pytest.raises(CompensationError, match="inflight while held"):
        sync_held_plan(t.table(), tc)
    assert t.table().timeline.read_plan(tc) == before


def test_a_writer_that_requested_before_the_plan_was_written_becomes_a_blocker(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6)
    t.write([rec(i, 10) for i in range(3)], "insert")
    t.write([rec(0, 20)])
    tc = plan_compaction(t.table(), EVERY_COMMIT, now()).instant
    # A writer whose instant time was taken before Tc and whose requested file lands after the plan.
    early = str(int(tc) - 1)
    t.table().timeline.create_requested("deltacommit", timestamp=early)
    assert sync_held_plan(t.table(), tc) == [early]


def test_without_the_sync_the_late_commit_would_be_lost(tmp_path):
    """The control: the same plan executed as first written drops dc1's rows once dc1 completes."""
    t = ModelledTable(tmp_path / "t", version=6, new_log_file_per_commit=True)
    dc1, dc2 = _history(t)
    tc = plan_compaction(t.table(), EVERY_COMMIT, now()).instant
    t.complete(dc1)
    run_rollback(t.table(), plan_rollback(t.table(), dc2).instant)
    t.pending.pop(dc2)
    run_compaction(t.table(), tc)  # not synced
    with pytest.raises(AssertionError):
        t.check()
