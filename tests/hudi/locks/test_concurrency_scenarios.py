"""The seeds' scenarios of concurrency control, with TMS as one more party to the table's lock: OCC between
writers (one fails, nothing lost), a clustering that gives way to a writer updating its file groups
(SparkAllowUpdateStrategy), the writer that loses to a clustering which completed first, and non-blocking
concurrency control merged by a compaction. Every outcome is read back with hudi-rs."""
from __future__ import annotations

import pytest
from concurrency_support import (
    NBCC,
    Party,
    check,
    create_table,
    fs_lock_options,
    plan_clustering_of_every_file_group,
    rec,
)

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.conflicts import WriteConflictError
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import parse_compaction_plan

CLUSTER_NOW = {"hoodie.clustering.async.max.commits": 1}
COMPACT_NOW = {"hoodie.compact.inline.max.delta.commits": 1}


def _timeline(path):
    return HudiTable.load(str(path)).timeline


@pytest.mark.parametrize("table_type, version", [("MERGE_ON_READ", 8), ("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 6)])
def test_two_writers_updating_one_file_group_under_occ_one_fails_and_nothing_is_lost(tmp_path, table_type, version):
    path = tmp_path / "t"
    model = create_table(path, table_type, version)
    a, b = Party(path, fs_lock_options(tmp_path)), Party(path, fs_lock_options(tmp_path))
    first = a.writer.write([rec(0, 5, "a")], leave_inflight=True)  # A writes its files, not yet committed
    b.writer.write([rec(0, 6, "b"), rec(1, 6, "b")])               # B updates the same file group and commits
    model.upsert([rec(0, 6, "b"), rec(1, 6, "b")])
    with pytest.raises(WriteConflictError, match=r"^conflict: (delta)?commit \d{17} overlaps") as e:
        a.writer.complete(first.instant)                            # A, completing second, fails
    assert e.value.reason == "conflict" and e.value.conflicts[0].instant.timestamp > first.instant
    assert not _timeline(path).is_completed(first.instant)          # A's write stays inflight, unread
    check(path, model)
    # TMS rolls the failed write back (under the lock); what B wrote stays.
    tms = Party(path, fs_lock_options(tmp_path))
    assert len(tms.roll_back_failed_writes()) == 1
    assert _timeline(path).get(first.instant) is None
    check(path, model)
    for party in (a, b, tms):
        party.close()


def test_writes_to_different_file_groups_both_commit_under_occ(tmp_path):
    path = tmp_path / "t"
    model = create_table(path, partitioned=True)
    a, b = Party(path, fs_lock_options(tmp_path)), Party(path, fs_lock_options(tmp_path))
    model.upsert([rec(1, 1), rec(2, 1)])
    a.writer.write([rec(1, 1), rec(2, 1)])                          # new file groups in nyc and sp
    first = a.writer.write([rec(0, 5, "a")], leave_inflight=True)   # sf
    b.writer.write([rec(1, 6, "b")])                                # nyc
    a.writer.complete(first.instant)
    model.upsert([rec(1, 6, "b"), rec(0, 5, "a")])
    check(path, model)


def _small_file_groups(path, tmp_path, version=8) -> tuple:
    model = create_table(path, "MERGE_ON_READ", version)
    tms = Party(path, fs_lock_options(tmp_path))
    writer = Party(path, fs_lock_options(tmp_path), allow_updates_to_clustering=True)
    for i in range(1, 4):
        writer.writer.write([rec(i * 10 + j, 1) for j in range(3)], "insert")  # a file group per insert
        model.upsert([rec(i * 10 + j, 1) for j in range(3)])
    return model, tms, writer


class WriteWhileRunning(LocalRunner):
    """Runs the plan's tasks, then lets a writer commit before the executor completes the instant."""

    def __init__(self, write):
        super().__init__(1)
        self.write = write

    def map(self, fn, tasks, description="", sizes=None):
        results = super().map(fn, tasks, description, sizes)
        self.write()
        return results


@pytest.mark.parametrize("version", [8, 6])
def test_clustering_gives_way_to_a_writer_updating_its_file_groups(tmp_path, version):
    path = tmp_path / "t"
    model, tms, writer = _small_file_groups(path, tmp_path, version)
    planned = tms.schedule("clustering", **CLUSTER_NOW)
    assert planned is not None

    def update_clustered_group():
        writer.writer.write([rec(20, 9, "during clustering")])  # SparkAllowUpdateStrategy: accepted
        model.upsert([rec(20, 9, "during clustering")])

    with pytest.raises(WriteConflictError, match="the writer wins") as e:
        execute_instant(tms.table, planned, WriteWhileRunning(update_clustered_group), transactions=tms.transactions)
    assert e.value.reason == "conflict"
    tl = _timeline(path)
    assert tl.get(planned) is None  # the attempt was rolled back and its plan dropped
    rollback = tl.last_of([Action.ROLLBACK], completed=True)
    assert rollback is not None and planned in tl.read(rollback).decode("latin-1")
    assert not [p for p in path.rglob(f"*_{planned}.parquet")]  # no file of the attempt is left
    check(path, model)  # the update is read
    # The next clustering takes the writer's data.
    again = tms.schedule("clustering", **CLUSTER_NOW)
    result = execute_instant(tms.table, again, LocalRunner(), transactions=tms.transactions)
    assert result.instant.action == Action.REPLACE_COMMIT
    check(path, model)


def test_writer_rejects_updates_to_file_groups_being_clustered_by_default(tmp_path):
    path = tmp_path / "t"
    model, tms, _ = _small_file_groups(path, tmp_path)
    assert tms.schedule("clustering", **CLUSTER_NOW)
    rejecting = Party(path, fs_lock_options(tmp_path))
    with pytest.raises(HudiError, match="is being clustered"):
        rejecting.writer.write([rec(20, 9)])
    check(path, model)


def test_a_clustering_gives_way_to_a_write_still_in_flight_over_its_file_groups(tmp_path):
    """MVCC: a writer is never failed because of a table service. A write still running into a clustered
    file group (known by its markers) makes the clustering give way; the write then commits."""
    path = tmp_path / "t"
    model, tms, writer = _small_file_groups(path, tmp_path)
    planned = tms.schedule("clustering", **CLUSTER_NOW)
    running = writer.writer.write([rec(20, 9, "still running")], leave_inflight=True)
    with pytest.raises(WriteConflictError, match=rf"overlaps deltacommit {running.instant} on "):
        execute_instant(tms.table, planned, LocalRunner(), transactions=tms.transactions)
    assert _timeline(path).get(planned) is None
    writer.writer.complete(running.instant)
    model.upsert([rec(20, 9, "still running")])
    check(path, model)


def test_a_write_not_yet_known_to_the_clustering_fails_if_the_clustering_commits_first(tmp_path):
    """The race Hudi resolves against the writer: its files were not yet known (no markers, no workload in
    its inflight file) when the clustering checked, so the clustering completed; the writer's own check then
    fails it, and its update, never acknowledged, is not read."""
    path = tmp_path / "t"
    model, tms, writer = _small_file_groups(path, tmp_path)
    planned = tms.schedule("clustering", **CLUSTER_NOW)
    late = writer.writer.write([rec(20, 9, "lost?")], leave_inflight=True)
    markers = path / ".hoodie" / ".temp" / late.instant
    hidden = tmp_path / "markers-not-yet-written"
    markers.rename(hidden)
    inflight = next((path / ".hoodie" / "timeline").glob(f"{late.instant}.deltacommit.inflight"))
    workload = inflight.read_bytes()
    inflight.write_bytes(b"")  # as right after the transition to inflight
    execute_instant(tms.table, planned, LocalRunner(), transactions=tms.transactions)
    hidden.rename(markers)
    inflight.write_bytes(workload)
    with pytest.raises(WriteConflictError, match=f"replacecommit {planned}"):
        writer.writer.complete(late.instant)
    check(path, model)  # the clustered rows, without the unacknowledged update


def test_a_clustering_planned_after_a_rejecting_writer_started_fails_that_writer(tmp_path):
    """The writer rejects updates to clustered file groups but could not see a plan made after it started."""
    path = tmp_path / "t"
    model, tms, _ = _small_file_groups(path, tmp_path)
    rejecting = Party(path, fs_lock_options(tmp_path))
    started = rejecting.writer.write([rec(20, 9)], leave_inflight=True)
    planned = plan_clustering_of_every_file_group(Party(path, fs_lock_options(tmp_path)))
    assert _timeline(path).states_of(planned)[State.REQUESTED].action in (Action.CLUSTERING, Action.REPLACE_COMMIT)
    with pytest.raises(WriteConflictError, match=f"{planned}"):
        rejecting.writer.complete(started.instant)
    assert len(tms.roll_back_failed_writes()) == 1  # the failed write held the plan until rolled back
    execute_instant(tms.table, planned, LocalRunner(), transactions=tms.transactions)
    check(path, model)


@pytest.mark.parametrize("event_time", [True, False])
def test_nbcc_writers_append_to_one_file_group_and_a_compaction_merges_them(tmp_path, event_time):
    """Non-blocking concurrency control: two writers' log files in one file group, both committed. Readers and
    the compaction merge them by the ordering field (event time), or (commit time) in delta commit order, as
    Java's log file order and hudi-rs have it; file slices follow completion time."""
    path = tmp_path / "t"
    model = create_table(path, "MERGE_ON_READ", 8, event_time=event_time)
    writers = [Party(path, fs_lock_options(tmp_path, NBCC)) for _ in range(3)]
    writers[0].writer.write([rec(i, 1) for i in range(1, 5)])
    model.upsert([rec(i, 1) for i in range(1, 5)])
    a, b = writers[1], writers[2]
    # A starts first and completes last; B starts second and completes first: no conflict under NBCC.
    first = a.writer.write([rec(0, 7, "a"), rec(1, 3, "a"), rec(2, 3, "a")], leave_inflight=True)
    second = b.writer.write([rec(0, 5, "b"), rec(1, 4, "b"), rec(3, 4, "b")])
    a.writer.complete(first.instant)
    model.upsert([rec(0, 7, "a"), rec(1, 3, "a"), rec(2, 3, "a")])
    model.upsert([rec(0, 5, "b"), rec(1, 4, "b"), rec(3, 4, "b")])
    tl = _timeline(path)
    assert tl.get(first.instant).completion_time > tl.get(second.instant).completion_time > first.instant
    check(path, model)
    # A writer that starts before the compaction is planned and completes after it: its log file belongs to
    # the next file slice (by completion time), so the compaction neither takes nor loses it.
    late = a.writer.write([rec(4, 9, "late")], leave_inflight=True)
    tms = Party(path, fs_lock_options(tmp_path, NBCC))
    planned = tms.schedule("compaction", **COMPACT_NOW)
    assert planned is not None and planned > late.instant
    a.writer.complete(late.instant)
    model.upsert([rec(4, 9, "late")])
    execute_instant(tms.table, planned, LocalRunner(), transactions=tms.transactions)
    check(path, model)  # hudi-rs reads the compacted base file and the late log: the model's rows
    plan = parse_compaction_plan(_timeline(path).read_plan(planned))
    logs = [p for op in plan.operations for p in op.delta_file_paths]
    assert any(f"_{second.instant}.log." in p for p in logs) and not any(f"_{late.instant}.log." in p for p in logs)


@pytest.mark.parametrize("table_type, version", [("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 6)])
def test_nbcc_is_refused_where_hudi_does_not_allow_it(tmp_path, table_type, version):
    path = tmp_path / "t"
    create_table(path, table_type, version)
    with pytest.raises(HudiError, match="NON_BLOCKING_CONCURRENCY_CONTROL needs a MERGE_ON_READ table of version 8"):
        Party(path, fs_lock_options(tmp_path, NBCC))
