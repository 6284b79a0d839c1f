"""A long-lived reader of a timeline (the planner) lists only the timeline folder's tail (S3's `start-after`),
yet its view never misses a file a whole listing would show, where a decision depends on it: an instant that
completes out of order, a writer whose clock lags, a savepoint created after newer commits, the rollback of
a completed instant. On S3 (the moto server) and on the local disk; each test also proves that the tail was
listed (else it would prove nothing)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from tms.hudi.errors import InstantConflictError
from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.instant import Action, Instant, State, new_instant_time
from tms.hudi.timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    serialize_clean_metadata,
    serialize_cleaner_plan,
    serialize_commit_metadata,
)
from tms.hudi.timeline.tail_listing import TailListing

LATENESS = timedelta(minutes=10)
META = serialize_commit_metadata(CommitMetadata(partition_to_write_stats={}, operation_type="UPSERT"), 8)


@pytest.fixture(params=["local", "s3"])
def base(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "t")
    return f"{request.getfixturevalue('s3_base')}/t"


class Writer:
    """Another process writing the table's timeline (it lists the whole folder), at instant times `minutes`
    after a start two hours ago."""

    def __init__(self, base: str):
        schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("city", pa.string())])
        HudiWriter.create_table(base, table_type="MERGE_ON_READ", version=8, key=["id"], ordering=["ts"],
                                partition=["city"], schema=schema)
        self.base = base
        self.table = HudiTable.load(base)
        self.start = datetime.now(UTC) - timedelta(hours=2)

    def at(self, minutes: float) -> str:
        return new_instant_time(self.table.config.timeline_zone, self.start + timedelta(minutes=minutes))

    def request(self, minutes: float, action: str = Action.DELTA_COMMIT) -> Instant:
        tl = self.table.timeline
        return tl.transition_to_inflight(tl.create_requested(action, b"", self.at(minutes)))

    def complete(self, inflight: Instant, minutes: float) -> None:
        self.table.timeline.complete(inflight, META, self.at(minutes))

    def commit(self, minutes: float) -> str:
        inflight = self.request(minutes)
        self.complete(inflight, minutes + 0.5)
        return inflight.timestamp

    def clean(self, minutes: float, retain: str | None, *, complete: bool = True) -> None:
        """A clean whose earliest commit to retain is `retain` (None: none, as a file-versions policy has)."""
        earliest = None if retain is None else ActionInstant(timestamp=retain, action="deltacommit", state="COMPLETED")
        tl = self.table.timeline
        plan = serialize_cleaner_plan(CleanerPlan(earliest_instant_to_retain=earliest, policy="KEEP_LATEST_COMMITS"))
        inflight = tl.transition_to_inflight(tl.create_requested(Action.CLEAN, plan, self.at(minutes)))
        if complete:
            tl.complete(inflight, serialize_clean_metadata(CleanMetadata(
                start_clean_time=inflight.timestamp, time_taken_in_millis=1, total_files_deleted=0,
                earliest_commit_to_retain=retain or "")), self.at(minutes + 0.5))


class Reader:
    """The planner's view of the table: its timeline lists the tail; counts its whole and tail listings."""

    def __init__(self, base: str, full_every: int = 50):
        self.table = HudiTable.load(base)
        self.timeline = self.table.timeline
        self.timeline.tail_listing = TailListing(lateness=LATENESS, full_every=full_every)
        self.listings = {"whole": 0, "tail": 0}
        self.keys: list[str] = []  # the keys of the tail listings
        storage = self.table.storage
        names, names_after = storage.names, storage.names_after

        def whole(rel: str) -> list[str]:
            self.listings["whole"] += 1
            return names(rel)

        def tail(rel: str, start_after: str) -> list[str] | None:
            self.listings["tail"] += 1
            self.keys.append(start_after)
            return names_after(rel, start_after)

        storage.names = whole  # type: ignore[method-assign]
        storage.names_after = tail  # type: ignore[method-assign]
        # The planner's first pass of a table it loaded lists it whole (and learns the savepoint bound)
        self.timeline.reload(force=True, full=True)
        self.listings = {"whole": 0, "tail": 0}

    def reload(self) -> dict[str, int]:
        """A reload, as a planning pass makes it; which listings it made."""
        before = dict(self.listings)
        self.timeline.reload(force=True)
        return {k: self.listings[k] - before[k] for k in self.listings}

    def exact_savepoints(self) -> tuple[list[str], dict[str, int]]:
        """The savepoints a planning pass that cleans sees (its exact reload under the lock), and which
        listings it made."""
        before = dict(self.listings)
        with TransactionManager.single_writer(self.table).transaction(exact_view=True) as timeline:
            seen = [s.timestamp for s in timeline.savepoints()]
        return seen, {k: self.listings[k] - before[k] for k in self.listings}

    def assert_sees_what_a_whole_listing_shows(self, base: str) -> None:
        fresh = HudiTable.load(base).timeline
        assert self.timeline.all_files() == fresh.all_files()
        assert self.timeline.savepoints() == fresh.savepoints()


TAIL = {"whole": 0, "tail": 1}


def test_an_instant_completing_out_of_order_is_seen_by_the_tail_listing(base):
    writer = Writer(base)
    for m in range(0, 50, 2):
        writer.commit(m)
    compaction = writer.request(50, Action.COMPACTION)  # pending while 25 minutes of newer commits complete
    reader = Reader(base)
    for m in range(52, 80, 2):
        writer.commit(m)
        assert reader.reload() == TAIL
    slow_write = writer.request(81)
    for m in range(82, 110, 2):
        writer.commit(m)
        assert reader.reload() == TAIL
    writer.complete(compaction, 111)  # `<50>_<111>.commit`: named by its instant time, 60 minutes back
    writer.complete(slow_write, 112)
    assert reader.reload() == TAIL
    assert reader.timeline.is_completed(compaction.timestamp)
    assert reader.timeline.is_completed(slow_write.timestamp)
    assert not reader.timeline.pending()
    reader.assert_sees_what_a_whole_listing_shows(base)


def test_a_lagging_writer_is_seen_within_the_lateness_and_by_the_periodic_whole_listing(base):
    writer = Writer(base)
    for m in range(0, 60, 2):
        writer.commit(m)
    reader = Reader(base, full_every=3)
    lagging = writer.commit(55)  # its clock 5 minutes behind the newest instant time: within the lateness
    assert reader.reload() == TAIL
    assert reader.timeline.is_completed(lagging)
    very_late = writer.commit(45)  # 15 minutes behind: beyond the lateness Hudi's skew bound is assumed in
    # At most `full_every` reloads later, a whole listing sees it; a pass that plans a clean, a rollback or a
    # savepoint lists the whole folder at once (see the savepoint test).
    seen = []
    for _ in range(3):
        reader.reload()
        seen.append(reader.timeline.is_completed(very_late))
    assert seen[-1] and reader.listings["whole"] == 1  # the periodic whole listing
    reader.assert_sees_what_a_whole_listing_shows(base)


def test_a_savepoint_created_after_newer_commits_is_seen_by_what_decides_on_savepoints(base):
    writer = Writer(base)
    old = writer.commit(0)
    for m in range(2, 60, 2):
        writer.commit(m)
    reader = Reader(base)
    assert reader.reload() == TAIL
    writer.table.timeline.write_savepoint(old, b"")  # `<old>.savepoint*`: an hour behind the newest instant
    # A planning pass that cleans, rolls back or applies the savepoint policy lists the whole folder under the
    # lock; so does a savepoint written by the reader's process.
    with TransactionManager.single_writer(reader.table).transaction(exact_view=True) as timeline:
        assert [s.timestamp for s in timeline.savepoints()] == [old]
    assert reader.listings["whole"] == 1
    with pytest.raises(InstantConflictError, match="already has a savepoint"):
        reader.timeline.write_savepoint(old, b"")
    reader.assert_sees_what_a_whole_listing_shows(base)
    writer.table.timeline.delete_savepoint(old)
    with TransactionManager.single_writer(reader.table).transaction(exact_view=True) as timeline:
        assert timeline.savepoints() == []


def test_what_decides_on_savepoints_lists_from_the_latest_clean_s_earliest_commit_to_retain(base):
    writer = Writer(base)
    commits = {m: writer.commit(m) for m in range(0, 90, 2)}
    writer.clean(71, commits[20])  # Hudi refuses savepoints of commits before this clean's earliest retained one
    reader = Reader(base)
    assert reader.reload() == TAIL
    writer.table.timeline.write_savepoint(commits[30], b"")  # an hour behind the newest instant
    assert reader.reload() == TAIL  # behind the tail's key: unseen by a pass that does not decide on it
    assert reader.timeline.savepoints() == []
    assert reader.exact_savepoints() == ([commits[30]], TAIL)  # listed from the clean's bound, not whole
    assert reader.keys[-1] == commits[20][:14]
    writer.table.timeline.write_savepoint(commits[24], b"")  # seen only from the bound
    assert reader.exact_savepoints() == ([commits[24], commits[30]], TAIL)
    writer.table.timeline.delete_savepoint(commits[30])
    assert reader.exact_savepoints() == ([commits[24]], TAIL)
    reader.assert_sees_what_a_whole_listing_shows(base)
    # A later clean with a later bound: the next exact listing starts there; the savepoint before it is kept
    writer.clean(92, commits[40])
    for m in range(94, 100, 2):
        writer.commit(m)
    assert reader.exact_savepoints() == ([commits[24]], TAIL)  # from the old bound: this one takes the new
    assert reader.exact_savepoints() == ([commits[24]], TAIL)
    assert reader.keys[-1] == commits[40][:14]
    reader.assert_sees_what_a_whole_listing_shows(base)


@pytest.mark.parametrize("lowered", ["to an older commit", "to none"])
def test_a_clean_that_lowers_the_savepoint_bound_makes_the_exact_listing_whole(base, lowered):
    writer = Writer(base)
    commits = {m: writer.commit(m) for m in range(0, 90, 2)}
    writer.clean(71, commits[40])
    reader = Reader(base)
    assert reader.exact_savepoints() == ([], TAIL)
    # A clean policy that retains more (or file versions: no earliest commit) lets savepoints keep older commits
    writer.clean(91, commits[10] if lowered == "to an older commit" else None, complete=False)
    writer.table.timeline.write_savepoint(commits[20], b"")
    assert reader.exact_savepoints() == ([commits[20]], {"whole": 1, "tail": 1})
    reader.assert_sees_what_a_whole_listing_shows(base)
    expected = TAIL if lowered == "to an older commit" else {"whole": 1, "tail": 0}
    assert reader.exact_savepoints() == ([commits[20]], expected)


def test_the_rollback_of_a_completed_instant_is_seen_with_the_files_it_removed(base):
    writer = Writer(base)
    rolled_back = writer.commit(0)
    for m in range(2, 60, 2):
        writer.commit(m)
    reader = Reader(base)
    assert reader.reload() == TAIL
    rollback = writer.request(61, Action.ROLLBACK)
    assert reader.reload() == {"whole": 1, "tail": 1}  # a new rollback instant: its removals lie behind the key
    assert reader.reload() == {"whole": 1, "tail": 0}  # while it is pending, the whole folder every time
    writer.table.timeline.delete_instant(rolled_back)  # the completed instant's files, an hour behind the key
    assert reader.reload() == {"whole": 1, "tail": 0}
    assert reader.timeline.get(rolled_back) is None
    writer.complete(rollback, 62)
    assert reader.reload() == {"whole": 1, "tail": 0}  # it was pending: listed whole, its completion seen
    assert reader.reload() == TAIL  # nothing pending behind the key any more
    assert reader.timeline.is_completed(rollback.timestamp)
    reader.assert_sees_what_a_whole_listing_shows(base)


def test_files_removed_at_the_tail_are_forgotten(base):
    writer = Writer(base)
    for m in range(0, 60, 2):
        writer.commit(m)
    failed = writer.request(60)
    reader = Reader(base)
    assert reader.timeline.get(failed.timestamp) is not None
    writer.table.timeline.delete_pending(failed.timestamp)  # a failed write's files, removed by its rollback
    assert reader.reload() == TAIL
    assert reader.timeline.get(failed.timestamp) is None
    reader.assert_sees_what_a_whole_listing_shows(base)


def test_the_tail_listing_lists_what_a_whole_listing_lists_after_the_name(base):
    writer = Writer(base)
    for m in range(0, 10, 2):
        writer.commit(m)
    storage = writer.table.storage
    folder = writer.table.config.timeline_dir
    whole = storage.names(folder)
    key = writer.at(4)[:14]
    tail = storage.names_after(folder, key)
    if base.startswith("s3://"):
        assert tail is not None
    assert tail is None or sorted(tail) == sorted(n for n in whole if n > key)


def test_the_key_is_behind_the_oldest_pending_instant_and_the_lateness_in_whole_seconds():
    tail = TailListing(lateness=timedelta(hours=1))
    assert tail.start_after("20260101120000500", None) == "20260101110000"
    assert tail.start_after("20260101120000500", "20260101103000123") == "20260101103000"
    assert tail.start_after("", None) is None  # nothing seen yet: the whole folder
    # An older Hudi's 14-digit instant time at the key's second sorts after it, as later ones do
    assert all(name > "20260101110000" for name in ("20260101110000.commit", "20260101110000000.deltacommit",
                                                    "20260101110000000_20260101110001000.deltacommit"))


def test_instants_archived_behind_the_tail_are_forgotten_not_read(base):
    """Archival deletes the oldest instant files, behind any tail key: the new archived-timeline version it writes
    first makes the next reload list the folder whole."""
    from tms.hudi.table.archival import ArchivalSettings, archive

    writer = Writer(base)
    commits = [writer.commit(m) for m in range(0, 20, 2)]
    reader = Reader(base)
    assert reader.reload() == TAIL
    reader.timeline.read(reader.timeline.states_of(commits[0])[State.COMPLETED])  # a reader of the oldest one
    result = archive(writer.table, ArchivalSettings(min_commits=2, max_commits=4, compaction_delta_commits=None))
    assert result.archived == commits[:8]
    assert reader.reload() == {"whole": 1, "tail": 1}
    reader.assert_sees_what_a_whole_listing_shows(base)
    assert reader.timeline.states_of(commits[0]) == {}
    assert reader.reload() == TAIL  # the same version: the tail again
