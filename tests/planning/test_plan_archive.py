"""When TMS plans archival (tms.planning.archive, the digest's pre-check, the decisions): Hudi's archival rule with
the limits of the table's policy (hoodie.keep.*), the cleaner's retained commits widening them, and what holds it
back (a savepoint, a pending compaction) through the library; hoodie.archive.automatic=false keeps it off the
planner's own passes."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import new_table_properties
from tms.hudi.timeline.instant import Action
from tms.planning.archive import archival_options, archival_settings, plan_archive
from tms.planning.decisions import PlannerOptions, not_scheduled_reason, on_events, scheduled_services
from tms.planning.digest import TimelineDigest
from tms.planning.policy import TablePolicy
from tms.table_service import TableService

NOW = datetime.now(UTC)
# keep 2..4 commits; the cleaner retains 1 (so it does not widen the limits)
SMALL = {"hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4, "hoodie.cleaner.commits.retained": 1}
ARCHIVE = frozenset({TableService.ARCHIVE.value})


def _table(path, table_type="COPY_ON_WRITE") -> HudiTable:
    props = new_table_properties(name=path.name, table_type=table_type, version=9, record_key=["id"],
                                 ordering=["ts"], partition=["p"], schema_json=None)
    return HudiTable.create(str(path), props)


def _commit(table: HudiTable, action: str = Action.COMMIT, *, finish: bool = True, plan: bytes = b"") -> str:
    tl = table.timeline
    inflight = tl.transition_to_inflight(tl.create_requested(action, plan))
    if finish:
        tl.complete(inflight, b"{}")
    return inflight.timestamp


def _commits(table: HudiTable, n: int, action: str = Action.COMMIT) -> list[str]:
    return [_commit(table, action) for _ in range(n)]


def test_over_the_limit_an_archival_through_the_oldest_commits_is_planned(tmp_path):
    table = _table(tmp_path / "t")
    commits = _commits(table, 4)
    policy = TablePolicy.from_stored(SMALL)
    assert plan_archive(table, policy, NOW) is None  # 4 commits: not over hoodie.keep.max.commits
    commits += _commits(table, 1)
    planned = plan_archive(table, policy, NOW)
    assert planned is not None and (planned.service, planned.instant, planned.stats.operations) == (
        TableService.ARCHIVE, commits[2], 3)  # down to hoodie.keep.min.commits


def test_the_cleaners_retained_commits_widen_the_limits(tmp_path):
    table = _table(tmp_path / "t")
    _commits(table, 6)
    # Hudi's default retention (10 commits) keeps every commit of 6: the archiver keeps them all too
    assert plan_archive(table, TablePolicy.from_stored({**SMALL, "hoodie.cleaner.commits.retained": 4}), NOW) is None


def test_a_savepoint_holds_archival_back(tmp_path):
    table = _table(tmp_path / "t")
    commits = _commits(table, 6)
    table.timeline.write_savepoint(commits[0], b"savepoint")
    assert plan_archive(table, TablePolicy.from_stored(SMALL), NOW) is None
    planned = plan_archive(table, TablePolicy.from_stored({**SMALL, "hoodie.archive.beyond.savepoint": True}), NOW)
    assert planned is not None and planned.instant == commits[4]  # the savepointed commit stays


def test_a_pending_compaction_holds_archival_back(tmp_path):
    table = _table(tmp_path / "t", "MERGE_ON_READ")
    _commit(table, Action.COMPACTION, finish=False, plan=b"plan")
    _commits(table, 6, Action.DELTA_COMMIT)
    assert plan_archive(table, TablePolicy.from_stored(SMALL), NOW) is None


def test_the_policy_gives_hudis_options_to_the_archiver():
    policy = TablePolicy.from_stored({"hoodie.keep.min.commits": 5, "hoodie.keep.max.commits": 8,
                                      "hoodie.archive.beyond.savepoint": True,
                                      "hoodie.metadata.keep.max.commits": 40})
    options = archival_options(policy)
    settings = archival_settings(options)
    assert (settings.min_commits, settings.max_commits, settings.beyond_savepoint) == (5, 8, True)
    assert settings.for_metadata_table(options).max_commits == 40
    with pytest.raises(ValueError, match=r"hoodie.keep.max.commits \(3\) must be greater than hoodie.keep.min"):
        TablePolicy.from_stored({"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 3})


def _digest(table: HudiTable, services=ARCHIVE) -> TimelineDigest:
    return TimelineDigest.of(table, None, NOW, services)


class _Event:
    def __init__(self, instant: str):
        self.instant, self.action, self.state = instant, "commit", "completed"


def test_the_digest_finds_archival_due_past_the_limit_and_waits_after_an_empty_attempt(tmp_path):
    table = _table(tmp_path / "t")
    _commits(table, 4)
    policy = TablePolicy.from_stored(SMALL)
    options = PlannerOptions(services=ARCHIVE, clean_commits=1000)
    digest = _digest(table)
    assert digest.commits == 4 and not digest.archive_may_be_due(policy)
    digest.observe(_commit(table), "commit", "completed", NOW)
    assert TableService.ARCHIVE in on_events(digest, [_Event("x")], policy, NOW, options, is_mor=False).services
    digest.attempted(TableService.ARCHIVE, "x", finding="held back")
    assert not digest.archive_may_be_due(policy)  # until max - min more commits complete
    for _ in range(2):
        digest.observe(_commit(table), "commit", "completed", NOW)
    assert digest.archive_may_be_due(policy)
    assert TimelineDigest.from_state(digest.to_state(), ARCHIVE).commits == 7  # kept in planner_state
    assert _digest(table, frozenset()).commits == 0  # counted only when the planner schedules archival


def test_the_compaction_that_held_archival_back_makes_it_due_again_when_it_completes(tmp_path):
    table = _table(tmp_path / "t", "MERGE_ON_READ")
    policy = TablePolicy.from_stored({**SMALL, "hoodie.keep.max.commits": 5})  # re-attempted after 3 more commits
    _commits(table, 6, Action.DELTA_COMMIT)
    held = _commit(table, Action.COMPACTION, finish=False)
    digest = _digest(table)
    assert digest.archive_may_be_due(policy)
    digest.attempted(TableService.ARCHIVE, held, [held], finding="held back", held_by=held)
    digest.observe(_commit(table, Action.DELTA_COMMIT), "deltacommit", "completed", NOW)
    assert not digest.archive_may_be_due(policy), "another delta commit releases nothing"
    rebuilt = TimelineDigest.of(table, TimelineDigest.from_state(digest.to_state(), ARCHIVE), NOW, ARCHIVE)
    assert (rebuilt.archive_held_by, rebuilt.archive_may_be_due(policy)) == (held, False), "kept while pending"
    digest.observe(held, "commit", "completed", NOW)
    assert digest.archive_may_be_due(policy), "the compaction's completion releases the commits after its plan"
    # A planner that missed the event finds it on the timeline: the plan is no longer pending.
    table.timeline.complete(table.timeline.pending()[0], b"{}")
    table = HudiTable.load(str(tmp_path / "t"))
    assert TimelineDigest.of(table, rebuilt, NOW, ARCHIVE).archive_may_be_due(policy)


def test_automatic_false_keeps_archival_to_requests():
    off = TablePolicy.from_stored({"hoodie.archive.automatic": False})
    assert scheduled_services(ARCHIVE, off) == frozenset()
    assert not_scheduled_reason("archive", ARCHIVE, off).startswith(
        "archival is turned off by the table's policy (hoodie.archive.automatic=false)")
    assert scheduled_services(ARCHIVE, TablePolicy()) == ARCHIVE
    digest = TimelineDigest(commits=100)
    assert on_events(digest, [], off, NOW, PlannerOptions(services=ARCHIVE, clean_commits=1000),
                     is_mor=False).services == frozenset()
