"""A timeline fed its folder's changes by the kernel sees exactly what a fresh listing sees, without listing
the folder; whenever the feed cannot vouch for every change (kernel queue overflow, too many untaken
changes, the folder moved, a network filesystem) it lists the folder again. And the timeline's indexed
queries agree with plain filters over all instants."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import new_table_properties
from tms.hudi.timeline import watch as timeline_watch
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.watch import LOCAL_FILESYSTEMS, TimelineWatcher, filesystem_type


def _table(path: Path, version: int) -> HudiTable:
    props = new_table_properties(name="t", table_type="MERGE_ON_READ", version=version, record_key=["id"],
                                 ordering=[], partition=[], schema_json=None)
    return HudiTable.create(str(path), props)


def _snapshot(timeline) -> list[tuple]:
    return [(i, i.completion_time) for i in timeline.all_files()]


def _fresh(table: HudiTable) -> list[tuple]:
    return _snapshot(HudiTable.load(table.base_path).timeline)


class Watched:
    """A table, and a second loading of it whose timeline is fed by a watcher and counts its listings."""

    def __init__(self, path: Path, version: int, watcher: TimelineWatcher):
        self.writer = _table(path, version)
        self.listings = 0
        self.reader = HudiTable.load(self.writer.base_path, watcher=watcher)
        real = self.reader.storage.names

        def counted(rel):
            self.listings += 1
            return real(rel)
        self.reader.storage.names = counted

    def in_step(self) -> bool:
        self.reader.timeline.reload()
        return _snapshot(self.reader.timeline) == _fresh(self.writer)


@pytest.fixture
def watcher():
    w = TimelineWatcher()
    yield w
    w.close()


def test_the_test_folders_are_on_a_local_filesystem(tmp_path):
    assert filesystem_type(str(tmp_path)) in LOCAL_FILESYSTEMS, "the watch tests need a local filesystem"


@pytest.mark.parametrize("version", [6, 8])
def test_a_watched_timeline_follows_another_writer_without_listing(tmp_path, watcher, version):
    w = Watched(tmp_path / "t", version, watcher)
    tl = w.writer.timeline
    assert w.reader.timeline.changes is not None  # loading listed the folder; the feed started then
    listed = w.listings
    done = tl.complete(tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT)), b"{}")
    assert w.in_step()
    failed = tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT))
    plan = tl.create_requested(Action.COMPACTION, b"plan")
    assert w.in_step()
    tl.rewrite_requested(plan, b"plan, synced")
    tl.delete_pending(failed.timestamp)
    assert w.in_step() and w.reader.timeline.read_plan(plan.timestamp) == b"plan, synced"
    tl.transition_to_inflight(plan)
    tl.revert_to_requested(plan.timestamp)
    assert w.in_step()
    assert w.listings == listed, "every change came from the feed"
    assert w.reader.timeline.get(done.timestamp).is_completed and w.reader.timeline.get(failed.timestamp) is None


def test_a_kernel_queue_overflow_makes_the_next_reload_list(tmp_path, watcher):
    w = Watched(tmp_path / "t", 8, watcher)
    w.reader.timeline.reload()
    listed = w.listings
    folder = Path(w.writer.storage.full(w.writer.config.timeline_dir))
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    for n in range(limit + 100):  # more events than the kernel queues: some are dropped
        (folder / f"junk-{n}").touch()
    tl = w.writer.timeline
    tl.complete(tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT)), b"{}")
    assert w.in_step() and w.listings == listed + 1
    tl.create_requested(Action.CLEAN, b"")
    assert w.in_step() and w.listings == listed + 1, "after the listing the feed is complete again"


def test_draining_between_passes_keeps_the_kernel_queue_from_overflowing(tmp_path, watcher, monkeypatch):
    monkeypatch.setattr(timeline_watch, "MAX_UNTAKEN", 10**6)
    monkeypatch.setattr(timeline_watch, "MAX_UNTAKEN_IN_ALL", 10**6)
    w = Watched(tmp_path / "t", 8, watcher)
    listed = w.listings
    folder = Path(w.writer.storage.full(w.writer.config.timeline_dir))
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    for n in range(limit + 100):
        (folder / f"junk-{n}").touch()
        if n % 1000 == 0:
            watcher.drain_now()  # as the planner's loop does
    tl = w.writer.timeline
    tl.complete(tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT)), b"{}")
    assert w.in_step() and w.listings == listed


def test_untaken_changes_are_bounded_in_all_folders(tmp_path, watcher, monkeypatch):
    monkeypatch.setattr(timeline_watch, "MAX_UNTAKEN_IN_ALL", 8)
    quiet, busy = Watched(tmp_path / "quiet", 8, watcher), Watched(tmp_path / "busy", 8, watcher)
    listed = quiet.listings, busy.listings
    quiet.writer.timeline.create_requested(Action.DELTA_COMMIT)
    tl = busy.writer.timeline
    for _ in range(3):  # nine more files: the folder whose change passes the bound is listed next time
        tl.complete(tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT)), b"{}")
    assert quiet.in_step() and busy.in_step()
    assert (quiet.listings, busy.listings) == (listed[0], listed[1] + 1)


def test_too_many_untaken_changes_make_the_next_reload_list(tmp_path, watcher, monkeypatch):
    monkeypatch.setattr(timeline_watch, "MAX_UNTAKEN", 5)
    w = Watched(tmp_path / "t", 8, watcher)
    w.reader.timeline.reload()
    listed = w.listings
    tl = w.writer.timeline
    for _ in range(3):  # nine files
        tl.complete(tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT)), b"{}")
    assert w.in_step() and w.listings == listed + 1


def test_a_moved_timeline_folder_is_listed_and_watched_again(tmp_path, watcher):
    w = Watched(tmp_path / "t", 8, watcher)
    w.reader.timeline.reload()
    folder = Path(w.writer.storage.full(w.writer.config.timeline_dir))
    tl = w.writer.timeline
    tl.create_requested(Action.DELTA_COMMIT)
    folder.rename(folder.with_name("moved"))
    folder.with_name("moved").rename(folder)  # same name again, but its watch saw it go
    listed = w.listings
    tl.create_requested(Action.CLEAN, b"")
    assert w.in_step() and w.listings == listed + 1
    tl.create_requested(Action.ROLLBACK, b"")
    assert w.in_step() and w.listings == listed + 1, "watched again after the listing"


def test_a_forgotten_feed_and_a_network_filesystem_mean_listing(tmp_path, watcher, monkeypatch):
    w = Watched(tmp_path / "t", 8, watcher)
    watcher.forget(w.reader.timeline.changes)
    listed = w.listings
    w.writer.timeline.create_requested(Action.DELTA_COMMIT)
    assert w.in_step() and w.listings == listed + 1

    monkeypatch.setattr(timeline_watch, "filesystem_type", lambda path: "nfs4")
    assert HudiTable.load(w.writer.base_path, watcher=watcher).timeline.changes is None


def test_filesystem_type_takes_the_longest_mount_point(tmp_path):
    assert filesystem_type("/proc/self") == "proc"
    assert filesystem_type(str(tmp_path)) == filesystem_type(os.path.dirname(str(tmp_path)))


# --- the indexes: the same answers as plain filters over every instant -----------------------------------
_OPS = st.lists(st.sampled_from(["write", "fail", "compact", "finish", "clean", "rollback", "drop"]),
                min_size=1, max_size=25)


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "30")), deadline=None)
@given(ops=_OPS, version=st.sampled_from([6, 8]))
def test_indexed_queries_match_plain_filters_and_the_feed_matches_a_listing(ops, version):
    with tempfile.TemporaryDirectory() as tmp:
        watcher = TimelineWatcher()
        try:
            w = Watched(Path(tmp) / "t", version, watcher)
            tl = w.writer.timeline
            for op in ops:
                pending = tl.pending()
                if op == "write":
                    tl.complete(tl.transition_to_inflight(tl.create_requested(Action.DELTA_COMMIT)), b"{}")
                elif op == "fail":
                    tl.transition_to_inflight(tl.create_requested(Action.COMMIT))
                elif op == "compact":
                    tl.create_requested(Action.COMPACTION, b"plan")
                elif op == "clean":
                    tl.create_requested(Action.CLEAN, b"")
                elif op == "rollback":
                    tl.create_requested(Action.ROLLBACK, b"")
                elif op == "finish" and pending:
                    inst = pending[0]
                    inflight = inst if not inst.is_requested else tl.transition_to_inflight(inst)
                    tl.complete(inflight, b"{}")
                elif op == "drop" and pending:
                    tl.delete_pending(pending[-1].timestamp)
                assert w.in_step()
                _check_indexes(w.reader.timeline)
        finally:
            watcher.close()


def _check_indexes(tl) -> None:
    every = tl.instants()
    times = [i.timestamp for i in every]
    assert len(tl) == len(every)
    for actions in (None, (Action.COMMIT,), (Action.DELTA_COMMIT, Action.COMPACTION),
                    (Action.CLEAN, Action.ROLLBACK, Action.COMMIT)):
        of = [i for i in every if actions is None or i.action in actions]
        assert list(tl.iter_instants(actions)) == of
        assert list(tl.iter_instants(actions, reverse=True)) == of[::-1]
        assert tl.pending(actions) == [i for i in of if not i.is_completed]
        assert tl.completed(actions) == [i for i in of if i.is_completed]
        for pivot in times[::3]:
            assert list(tl.iter_instants(actions, after=pivot)) == [i for i in of if i.timestamp > pivot]
            assert list(tl.iter_instants(actions, since=pivot)) == [i for i in of if i.timestamp >= pivot]
            assert list(tl.iter_instants(actions, before=pivot, reverse=True)) == \
                [i for i in of if i.timestamp < pivot][::-1]
        if actions:
            done = [i for i in of if i.is_completed]
            assert tl.last_of(actions, completed=True) == (done[-1] if done else None)
            assert tl.last_of(actions) == (of[-1] if of else None)
    assert tl.latest() == (every[-1] if every else None)
