"""Incremental scheduling (issue 37 item 1, Hudi 1.1's RFC-83): a compaction or clustering plan of a v8 table
looks only at the partitions written since the last completed plan of its service and those that plan left out,
and chooses the same file groups as a full pass; the full pass comes back after TMS_PLANNER_FULL_PASS_HOURS;
its storage requests follow the partitions it looks at (item 4)."""
from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_support import ModelledTable, _execute, now, policy, run_compaction

from tms.hudi.errors import HudiError
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.table.archival import ArchivalSettings, archive
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State, instant_to_datetime
from tms.hudi.timeline.serde import parse_compaction_plan, parse_requested_replace_metadata
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction
from tms.planning.incremental import (
    FULL,
    INCREMENTAL,
    POLICY_KEY,
    SCOPE_KEY,
    WRITES_FROM_KEY,
    Scope,
    plan_scope,
    policy_digest,
)
from tms.planning.policy import CompactionStrategy
from tms.table_service import TableService

DAY = timedelta(days=1)
CITIES = [f"c{n}" for n in range(5)]


def _rows(cities, ts: int, per_city: int = 2) -> list[dict]:
    return [{"id": n * 100 + k, "name": f"n{n}-{k}-{ts}", "ts": ts, "city": CITIES[n]}
            for n in sorted(cities) for k in range(per_city)]


def _compaction_ops(table: HudiTable, ts: str) -> list[tuple]:
    plan = parse_compaction_plan(table.timeline.read_plan(ts))
    return [(op.partition_path, op.file_id, op.base_instant_time, op.data_file_path, tuple(op.delta_file_paths))
            for op in plan.operations]


def _drop(table: HudiTable, ts: str) -> None:
    """Remove a requested plan from the timeline (to plan again at the same point)."""
    req = table.timeline.states_of(ts)[State.REQUESTED]
    table.storage.delete(table.timeline.path_of(req))
    table.timeline.reload(force=True)


def _compare_compaction(t: ModelledTable, pol) -> str | None:
    """Plan a full pass, remove it, plan incrementally: the same operations. Keeps the incremental plan."""
    full = plan_compaction(t.table(), pol, now(), force=True)
    full_ops = []
    if full is not None:
        full_ops = _compaction_ops(t.table(), full.instant)
        _drop(t.table(), full.instant)
    table = t.table()
    incremental = plan_compaction(table, pol, now(), force=True, full_pass_every=DAY)
    assert (incremental is None) == (full is None)
    if incremental is None:
        return None
    assert _compaction_ops(t.table(), incremental.instant) == full_ops
    return incremental.instant


# A write history: writes to sets of partitions (some left inflight and completed later: they complete after
# plans made meanwhile), plans, and their executions.
_STEP = st.one_of(
    st.tuples(st.just("write"), st.frozensets(st.integers(0, len(CITIES) - 1), min_size=1, max_size=3),
              st.booleans()),
    st.tuples(st.just("complete"), st.none(), st.none()),
    st.tuples(st.just("plan"), st.none(), st.none()),
    st.tuples(st.just("run"), st.none(), st.none()),
)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEP, min_size=3, max_size=8),
       strategy=st.sampled_from([CompactionStrategy.UNBOUNDED, CompactionStrategy.DAY_BASED,
                                 CompactionStrategy.LOG_FILE_NUM]))
def test_incremental_compaction_plans_what_a_full_pass_plans(tmp_path_factory, steps, strategy):
    """Over random write histories (late completions included), an incremental plan names the same
    operations as a full pass at the same point; strategies that leave file groups out (the newest partition
    only, at least 2 log files) have the next plans pick them up through the partitions they recorded."""
    pol = policy(hoodie__compaction__strategy=strategy.value, hoodie__compaction__daybased__target__partitions=1,
                 hoodie__compaction__logfile__num__threshold=2)
    t = ModelledTable(tmp_path_factory.mktemp("t") / "t", version=8)
    t.write(_rows(range(len(CITIES)), 1), "insert")
    planned: list[str] = []
    for n, (kind, cities, inflight) in enumerate(steps, start=2):
        if kind == "write":
            t.write(_rows(cities, n), leave_inflight=inflight)
        elif kind == "complete" and t.pending:
            t.complete(min(t.pending))
        elif kind == "plan":
            if (tc := _compare_compaction(t, pol)) is not None:
                planned.append(tc)
        elif kind == "run" and planned:
            run_compaction(t.table(), planned.pop(0))
    for instant in list(t.pending):
        t.complete(instant)
    while planned:
        run_compaction(t.table(), planned.pop(0))
    _compare_compaction(t, pol)  # after every late write completed


def _compacted_table(tmp_path, cities: int) -> ModelledTable:
    """A v8 table of `cities` partitions, one compaction completed (of partition c0)."""
    t = ModelledTable(tmp_path / "t", version=8)
    t.write([{"id": n, "name": "a", "ts": 1, "city": f"p{n:03d}"} for n in range(cities)], "insert")
    t.write([{"id": 0, "name": "b", "ts": 2, "city": "p000"}])
    tc = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    run_compaction(t.table(), tc.instant)
    return t


def test_a_plan_looks_only_at_the_partitions_written_since_the_last_one(tmp_path):
    t = _compacted_table(tmp_path, 6)
    t.write([{"id": n, "name": "c", "ts": 3, "city": f"p{n:03d}"} for n in (2, 4)])
    scope = plan_scope(t.table(), TableService.COMPACTION, now(), DAY, policy())
    assert scope.partitions == {"city=p002", "city=p004"}
    planned = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    plan = parse_compaction_plan(t.table().timeline.read_plan(planned.instant))
    assert sorted(op.partition_path for op in plan.operations) == ["city=p002", "city=p004"]
    assert plan.extra_metadata[SCOPE_KEY] == INCREMENTAL
    assert plan.missing_schedule_partitions == []
    t.check(hudi_rs=False)


def test_partitions_a_plan_left_out_are_looked_at_by_the_next(tmp_path):
    """The newest partition only (DayBasedCompactionStrategy, 1 partition): the others are recorded as missing
    and planned next, though nothing wrote to them since."""
    newest_only = policy(hoodie__compaction__strategy=CompactionStrategy.DAY_BASED.value,
                         hoodie__compaction__daybased__target__partitions=1)
    t = _compacted_table(tmp_path, 4)
    t.write([{"id": n, "name": "c", "ts": 3, "city": f"p{n:03d}"} for n in (1, 2, 3)])
    first = plan_compaction(t.table(), newest_only, now(), force=True, full_pass_every=DAY)
    plan = parse_compaction_plan(t.table().timeline.read_plan(first.instant))
    assert [op.partition_path for op in plan.operations] == ["city=p003"]
    assert plan.missing_schedule_partitions == ["city=p001", "city=p002"]
    run_compaction(t.table(), first.instant)
    scope = plan_scope(t.table(), TableService.COMPACTION, now(), DAY, newest_only)
    assert scope.partitions == {"city=p001", "city=p002"}
    second = plan_compaction(t.table(), newest_only, now(), force=True, full_pass_every=DAY)
    plan = parse_compaction_plan(t.table().timeline.read_plan(second.instant))
    assert ([op.partition_path for op in plan.operations], plan.missing_schedule_partitions) \
        == (["city=p002"], ["city=p001"])


def test_a_file_group_busy_in_a_pending_plan_is_planned_once_that_plan_completes(tmp_path):
    """A compaction still pending holds its file groups; a plan made meanwhile records their partitions, so
    that the plan after it looks at them again (their log files completed before it)."""
    t = _compacted_table(tmp_path, 3)
    t.write([{"id": 1, "name": "c", "ts": 3, "city": "p001"}])
    pending = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    t.write([{"id": 1, "name": "d", "ts": 4, "city": "p001"}, {"id": 2, "name": "d", "ts": 4, "city": "p002"}])
    meanwhile = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    plan = parse_compaction_plan(t.table().timeline.read_plan(meanwhile.instant))
    assert ([op.partition_path for op in plan.operations], plan.missing_schedule_partitions) \
        == (["city=p002"], ["city=p001"])
    run_compaction(t.table(), meanwhile.instant)
    run_compaction(t.table(), pending.instant)
    last = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    assert [op[0] for op in _compaction_ops(t.table(), last.instant)] == ["city=p001"]


def test_a_full_pass_comes_back_after_the_period(tmp_path):
    t = _compacted_table(tmp_path, 3)  # the completed compaction was a full pass
    table = t.table()
    boundary = table.timeline.last_of(("commit",), completed=True).timestamp
    at = instant_to_datetime(boundary, table.config.timeline_zone)
    assert parse_compaction_plan(table.timeline.read_plan(boundary)).extra_metadata[SCOPE_KEY] == FULL
    assert not plan_scope(table, TableService.COMPACTION, at + timedelta(hours=5), timedelta(hours=6), policy()).is_full
    assert plan_scope(table, TableService.COMPACTION, at + timedelta(hours=6), timedelta(hours=6), policy()).is_full
    assert plan_scope(table, TableService.COMPACTION, at, None, policy()).is_full  # TMS_PLANNER_FULL_PASS_HOURS=0
    t.write([{"id": 1, "name": "c", "ts": 3, "city": "p001"}])
    later = plan_compaction(t.table(), policy(), at + timedelta(hours=7), force=True,
                            full_pass_every=timedelta(hours=6))
    assert parse_compaction_plan(t.table().timeline.read_plan(later.instant)).extra_metadata[SCOPE_KEY] == FULL


def test_a_v6_table_is_always_planned_by_a_full_pass(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6)
    t.write(_rows(range(3), 1), "insert")
    t.write(_rows({0}, 2))
    assert plan_scope(t.table(), TableService.COMPACTION, now(), DAY, policy()).is_full
    planned = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    assert parse_compaction_plan(t.table().timeline.read_plan(planned.instant)).missing_schedule_partitions is None


def test_incremental_clustering_plans_what_a_full_pass_plans(tmp_path):
    """Clustering sorted by id groups every small file group: after one clustering and writes to two partitions,
    the incremental plan groups the same slices as a full pass (the last clustering's own output included)."""
    sort = policy(hoodie__clustering__plan__strategy__sort__columns="id", hoodie__clustering__async__max__commits=1)
    t = ModelledTable(tmp_path / "t", version=8)
    t.write(_rows(range(4), 1), "insert")
    first = plan_clustering(t.table(), sort, now(), force=True, full_pass_every=DAY)
    _execute(t.table(), first.instant)
    t.write(_rows({1, 3}, 2), "insert")

    def slices(ts: str) -> list[tuple]:
        meta = parse_requested_replace_metadata(t.table().timeline.read_plan(ts))
        return sorted((s.partition_path, s.file_id) for g in meta.clustering_plan.input_groups for s in g.slices)
    full = plan_clustering(t.table(), sort, now(), force=True)
    expected = slices(full.instant)
    _drop(t.table(), full.instant)
    scope = plan_scope(t.table(), TableService.CLUSTERING, now(), DAY, sort)
    assert not scope.is_full and scope.partitions <= {f"city=c{n}" for n in range(4)}
    incremental = plan_clustering(t.table(), sort, now(), force=True, full_pass_every=DAY)
    assert slices(incremental.instant) == expected
    t.check(hudi_rs=False)


def test_storage_requests_follow_the_partitions_looked_at(tmp_path, monkeypatch):
    """A table of 100 partitions, 2 written since the last compaction: the incremental plan lists those 2
    partitions and no other, and makes a small fraction of a full pass's storage requests."""
    t = _compacted_table(tmp_path, 100)
    t.write([{"id": n, "name": "c", "ts": 3, "city": f"p{n:03d}"} for n in (7, 70)])
    requests: Counter[str] = Counter()
    listed: list[str] = []
    for name in ("listdir", "names", "read_bytes", "open", "exists", "info"):
        method = getattr(LocalStorage, name)

        def counted(self, rel, *args, _name=name, _method=method, **kwargs):
            requests[_name] += 1
            if _name == "listdir":
                listed.append(rel)
            return _method(self, rel, *args, **kwargs)
        monkeypatch.setattr(LocalStorage, name, counted)

    def plan(**kw) -> tuple[int, list[str], str]:
        table = t.table()
        requests.clear()
        listed.clear()
        planned = plan_compaction(table, policy(), now(), force=True, **kw)
        return sum(requests.values()), [p for p in listed if not p.startswith(".hoodie")], planned.instant
    full_requests, full_listed, full = plan()
    _drop(t.table(), full)
    incremental_requests, incremental_listed, _ = plan(full_pass_every=DAY)
    assert len(full_listed) >= 100
    assert sorted(set(incremental_listed)) == ["city=p007", "city=p070"]
    assert incremental_requests * 10 < full_requests, (incremental_requests, full_requests)


def test_a_write_that_completed_after_the_last_plan_is_planned(tmp_path):
    """The compensation case: a delta commit that started before a compaction was planned and completed after
    it is counted by its completion time, so the next plan looks at its partition."""
    t = _compacted_table(tmp_path, 3)
    late = t.write([{"id": 2, "name": "c", "ts": 3, "city": "p002"}], leave_inflight=True)
    t.write([{"id": 1, "name": "c", "ts": 3, "city": "p001"}])
    first = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    assert [op[0] for op in _compaction_ops(t.table(), first.instant)] == ["city=p001"]
    run_compaction(t.table(), first.instant)
    t.complete(late)
    assert late < first.instant
    second = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    assert [op[0] for op in _compaction_ops(t.table(), second.instant)] == ["city=p002"]
    t.check(hudi_rs=False)


def _city(n: int, ts: int) -> list[dict]:
    return [{"id": n, "name": f"v{ts}", "ts": ts, "city": f"p{n:03d}"}]


def _archived_compaction(tmp_path) -> tuple[ModelledTable, str, str]:
    """A v8 table whose last compaction, a write that started before it was planned and completed after it (the
    late one) and two delta commits after it were archived; (table, compaction, late write)."""
    t = ModelledTable(tmp_path / "t", version=8)
    t.write([r for n in range(6) for r in _city(n, 1)], "insert")
    t.write(_city(0, 2))
    late = t.write(_city(5, 3), leave_inflight=True)
    compaction = plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    assert late < compaction.instant
    recorded = parse_compaction_plan(t.table().timeline.read_plan(compaction.instant)).extra_metadata
    assert recorded[WRITES_FROM_KEY] < late  # the oldest write pending when it was planned, less a margin
    run_compaction(t.table(), compaction.instant)
    t.complete(late)
    for n, ts in ((1, 4), (2, 5), (3, 6), (4, 7)):
        t.write(_city(n, ts))
    result = archive(t.table(), ArchivalSettings(min_commits=2, max_commits=3, compaction_delta_commits=None,
                                                 metadata_enabled=False))
    assert {compaction.instant, late} <= set(result.archived)
    return t, compaction.instant, late


def test_after_the_last_compaction_was_archived_the_next_plan_reads_it_and_the_writes_since_from_the_archive(
        tmp_path):
    """A busy table's archiver takes the last compaction and the delta commits after it (Hudi's rule once
    hoodie.compact.inline.max.delta.commits follow it; Hudi then plans by a full pass). TMS reads the plan and
    those commits from the archived timeline, a write that started before the compaction was planned and
    completed after it included, and plans what a full pass plans."""
    t, compaction, late = _archived_compaction(tmp_path)
    table = t.table()
    assert table.timeline.get(compaction) is None and table.timeline.get(late) is None
    scope = plan_scope(table, TableService.COMPACTION, now(), DAY, policy())
    assert not scope.is_full and "(archived)" in scope.why, scope.why
    assert scope.partitions == {f"city=p{n:03d}" for n in range(1, 6)}
    incremental = _compare_compaction(t, policy())
    assert incremental is not None
    assert sorted(op[0] for op in _compaction_ops(t.table(), incremental)) == [f"city=p{n:03d}" for n in range(1, 6)]
    # The plan read from the archive is looked for no further back than the full-pass period
    assert plan_scope(t.table(), TableService.COMPACTION, now() + 2 * DAY, DAY, policy()).is_full


@pytest.mark.parametrize("damage", ["garbage file", "manifest naming a path outside"])
def test_an_unreadable_archived_timeline_makes_a_full_pass_that_says_why(tmp_path, damage):
    """What the archived timeline holds is input: a file that is not Parquet, or a manifest naming a file outside
    its folder, makes the scope a full pass with one line of why, and the plan (whose file-system view needs the
    archived delta commits' completion times) a one-line refusal that writes nothing; nothing outside is read."""
    import json

    t, _compaction, _late = _archived_compaction(tmp_path)
    history = tmp_path / "t" / ".hoodie" / "timeline" / "history"
    version = (history / "_version_").read_text().strip()
    if damage == "garbage file":
        for name in json.loads((history / f"manifest_{version}").read_text())["files"]:
            (history / name["fileName"]).write_bytes(b"not parquet")
        expected = "cannot be read"
    else:
        (history / f"manifest_{version}").write_text(json.dumps({"files": [
            {"fileName": "../../../../20000101000000000_20991231000000000_0.parquet", "fileLen": 6}]}))
        expected = "names an unexpected file"
    scope = plan_scope(t.table(), TableService.COMPACTION, now(), DAY, policy())
    assert scope.is_full and "cannot be read" in scope.why and expected in scope.why, scope.why
    before = sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir())
    with pytest.raises(HudiError, match=expected):
        plan_compaction(t.table(), policy(), now(), force=True, full_pass_every=DAY)
    assert sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir()) == before


def _clustered_slices(table: HudiTable, ts: str) -> list[tuple]:
    meta = parse_requested_replace_metadata(table.timeline.read_plan(ts))
    return sorted((s.partition_path, s.file_id) for g in meta.clustering_plan.input_groups for s in g.slices)


def test_a_policy_change_makes_the_next_plan_a_full_pass_that_picks_unchanged_partitions(tmp_path):
    """Clustering without one-slice groups clusters only c0 (two small file groups); the others, one small file
    group each and unwritten since, were not left out by the plan (nothing there was eligible). Allowing one-slice
    groups makes them eligible: the next plan is a full pass and clusters them, as a full pass at the same point
    does; under the same policy again, the plan after it is incremental."""
    pairs_only = policy(hoodie__clustering__plan__strategy__single__group__clustering__enabled=False)
    singles = policy()  # one-slice groups allowed (Hudi's default)
    t = ModelledTable(tmp_path / "t", version=8)
    t.write(_rows(range(4), 1), "insert")
    t.write([{"id": 900, "name": "x", "ts": 2, "city": "c0"}], "insert")  # a second file group in c0
    first = plan_clustering(t.table(), pairs_only, now(), force=True, full_pass_every=DAY)
    assert {p for p, _ in _clustered_slices(t.table(), first.instant)} == {"city=c0"}
    _execute(t.table(), first.instant)
    unchanged = plan_scope(t.table(), TableService.CLUSTERING, now(), DAY, pairs_only)
    assert not unchanged.is_full and unchanged.partitions == {"city=c0"}  # the clustering's own output

    changed = plan_scope(t.table(), TableService.CLUSTERING, now(), DAY, singles)
    assert changed.is_full
    assert f"the clustering policy changed since the last clustering {first.instant}" in changed.why
    full = plan_clustering(t.table(), singles, now(), force=True)  # a full pass, for comparison
    expected = _clustered_slices(t.table(), full.instant)
    _drop(t.table(), full.instant)
    planned = plan_clustering(t.table(), singles, now(), force=True, full_pass_every=DAY)
    assert _clustered_slices(t.table(), planned.instant) == expected
    assert {"city=c1", "city=c2", "city=c3"} <= {p for p, _ in expected}
    meta = parse_requested_replace_metadata(t.table().timeline.read_plan(planned.instant)).clustering_plan
    assert meta.extra_metadata[SCOPE_KEY] == FULL
    assert meta.extra_metadata[POLICY_KEY] == policy_digest(singles, TableService.CLUSTERING)
    assert planned.scope.startswith("a full pass (the clustering policy changed")
    _execute(t.table(), planned.instant)
    assert not plan_scope(t.table(), TableService.CLUSTERING, now(), DAY, singles).is_full
    t.check(hudi_rs=False)


def test_a_compaction_plan_is_a_full_pass_after_a_change_of_the_options_that_choose_its_file_groups(tmp_path):
    t = _compacted_table(tmp_path, 3)
    t.write([{"id": 1, "name": "c", "ts": 3, "city": "p001"}])
    table = t.table()
    last = table.timeline.last_of(("commit",), completed=True).timestamp
    assert not plan_scope(table, TableService.COMPACTION, now(), DAY, policy()).is_full
    # the trigger's options do not choose file groups
    assert not plan_scope(table, TableService.COMPACTION, now(), DAY,
                          policy(hoodie__compact__inline__max__delta__commits=1)).is_full
    for changed in (policy(hoodie__compaction__target__io=1), policy(hoodie__compaction__logfile__num__threshold=2),
                    policy(hoodie__compaction__strategy=CompactionStrategy.UNBOUNDED.value)):
        scope = plan_scope(table, TableService.COMPACTION, now(), DAY, changed)
        assert scope.is_full and f"the compaction policy changed since the last compaction {last}" in scope.why
    planned = plan_compaction(t.table(), policy(hoodie__compaction__target__io=1), now(), force=True,
                              full_pass_every=DAY)
    plan = parse_compaction_plan(t.table().timeline.read_plan(planned.instant))
    assert plan.extra_metadata[SCOPE_KEY] == FULL
    assert plan.extra_metadata[POLICY_KEY] == policy_digest(policy(hoodie__compaction__target__io=1),
                                                            TableService.COMPACTION)


def test_a_last_plan_without_a_policy_digest_makes_a_full_pass(tmp_path, monkeypatch):
    """A plan TMS made before plans recorded their policy: whether the policy changed since is unknown."""
    recorded = Scope.metadata
    monkeypatch.setattr(Scope, "metadata", lambda scope: {k: v for k, v in recorded(scope).items() if k != POLICY_KEY})
    t = _compacted_table(tmp_path, 3)
    monkeypatch.undo()
    last = t.table().timeline.last_of(("commit",), completed=True).timestamp
    assert POLICY_KEY not in parse_compaction_plan(t.table().timeline.read_plan(last)).extra_metadata
    scope = plan_scope(t.table(), TableService.COMPACTION, now(), DAY, policy())
    assert scope.is_full and f"the last compaction {last} records no policy digest" in scope.why


def test_the_next_plan_of_a_loaded_table_takes_the_last_plans_scope_from_memory_not_its_file(tmp_path, monkeypatch):
    """The plan a loaded table wrote is not read back by the next plan of that table (a plan of a big table names
    every file group: reading it made an incremental plan's time follow the last plan's size); a table loaded
    afresh reads it, and both come to the same scope."""
    import tms.planning.incremental as incremental

    t = ModelledTable(tmp_path / "t", version=8)
    t.write([{"id": n, "name": "a", "ts": 1, "city": f"p{n:03d}"} for n in range(4)], "insert")
    t.write([{"id": 0, "name": "b", "ts": 2, "city": "p000"}])
    loaded = t.table()
    tc = plan_compaction(loaded, policy(), now(), force=True, full_pass_every=DAY)
    run_compaction(loaded, tc.instant)
    t.write([{"id": n, "name": "c", "ts": 3, "city": f"p{n:03d}"} for n in (1, 3)])
    fresh = plan_scope(t.table(), TableService.COMPACTION, now(), DAY, policy())
    assert fresh.partitions == {"city=p001", "city=p003"} and fresh.full_pass == tc.instant

    def unread(data):
        raise AssertionError("the last plan's file was read")

    monkeypatch.setattr(incremental, "read_plan_extra_metadata", unread)
    loaded.timeline.reload()
    assert plan_scope(loaded, TableService.COMPACTION, now(), DAY, policy()) == fresh
    with pytest.raises(AssertionError, match="file was read"):
        plan_scope(t.table(), TableService.COMPACTION, now(), DAY, policy())
