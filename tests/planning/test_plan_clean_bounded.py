"""Clean planning bounded in time and memory: incremental over the commits since the last clean
(hoodie.cleaner.incremental.mode) it plans what a full scan would; bounded to N files a plan
(tms.clean.max.files.per.plan), several plans delete exactly what one unbounded plan would."""
import os
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from planning_support import CITIES, ModelledTable, now, policy, rec, run_clean, run_compaction

from tms.hudi.table.savepoint import create_savepoint
from tms.hudi.timeline.instant import instant_to_datetime
from tms.hudi.timeline.serde import parse_cleaner_plan
from tms.planning.clean import plan_clean_or_why
from tms.planning.clean_partitions import RESUME_FROM, incremental_scope, last_clean
from tms.planning.compaction import plan_compaction
from tms.planning.planned import Planned

KEEP1 = {"hoodie__cleaner__commits__retained": 1}


def _plan_files(t: ModelledTable, planned: Planned | str) -> dict[str, list[str]] | str:
    if isinstance(planned, str):
        return planned
    plan = parse_cleaner_plan(t.table().timeline.read_plan(planned.instant))
    return {p: sorted(i.file_path for i in infos) for p, infos in plan.file_paths_to_be_deleted_per_partition.items()}


def _both_plans(t: ModelledTable, **options) -> tuple[Planned | str, object, object]:
    """The incremental plan (left on the timeline) with its files, and the files of a full plan made in its
    place (then removed)."""
    full = plan_clean_or_why(t.table(), policy(hoodie__cleaner__incremental__mode=False, **options), now())
    full_files = _plan_files(t, full)
    if isinstance(full, Planned):
        t.table().timeline.delete_pending(full.instant)
    incremental = plan_clean_or_why(t.table(), policy(**options), now())
    return incremental, _plan_files(t, incremental), full_files


def _write(t: ModelledTable, cities: set[int], step: int) -> str:
    return t.write([rec(i, step) for i in range(12) if i % 3 in cities])


_ops = st.lists(st.one_of(st.tuples(st.just("write"), st.sets(st.integers(0, 2), min_size=1)),
                          st.just(("compact", set())), st.just(("clean", set()))), min_size=3, max_size=9)


@settings(max_examples=int(os.environ.get("TMS_PROPERTY_EXAMPLES", "5")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, table_type=st.sampled_from(["MERGE_ON_READ", "COPY_ON_WRITE"]))
# a partition that only the last clean's earliest commit to retain wrote: that commit is in the next window
@example(ops=[("write", {0, 1, 2}), ("write", {1}), ("clean", set()), ("write", {0})], table_type="COPY_ON_WRITE")
def test_incremental_clean_plans_what_a_full_scan_plans(tmp_path_factory, ops, table_type):
    t = ModelledTable(tmp_path_factory.mktemp("inc") / "t", table_type, 8)
    _write(t, {0, 1, 2}, 1)
    for step, (op, cities) in enumerate([*ops, ("clean", set())], start=2):
        if op == "write":
            _write(t, cities, step)
        elif op == "compact" and table_type == "MERGE_ON_READ":
            planned = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now())
            if planned is not None:
                run_compaction(t.table(), planned.instant)
        incremental, files, full_files = _both_plans(t, **KEEP1)  # after every step, run or not
        assert files == full_files
        if isinstance(incremental, Planned):
            if op == "clean":
                run_clean(t.table(), incremental.instant)
            else:
                t.table().timeline.delete_pending(incremental.instant)
    t.check(hudi_rs=False)


def test_incremental_scope_is_the_partitions_written_since_the_last_clean(tmp_path):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    for step in range(1, 4):
        _write(t, {0, 1, 2}, step)
    _write(t, {1}, 4)
    planned = plan_clean_or_why(t.table(), policy(**KEEP1), now())
    run_clean(t.table(), planned.instant)  # up to the write of step 4
    _write(t, {1}, 5)  # one partition written since
    second = _write(t, {1}, 6)

    table = t.table()
    scope = incremental_scope(table, last_clean(table).earliest_commit_to_retain, table.timeline.get(second),
                              last_clean(table))
    nyc = f"city={CITIES[1]}"
    assert scope.partitions == [nyc]
    incremental, files, full_files = _both_plans(t, **KEEP1)
    assert files == full_files and list(files) == [nyc]


def test_fewer_commits_retained_widen_the_incremental_window_to_the_partitions_they_make_cleanable(tmp_path):
    """A retention change needs no full scan (Hudi's CleanPlanner makes none): a slice becomes cleanable only when
    a newer slice of its file group is older than the new earliest commit to retain, and the commit that wrote
    that slice lies between the last clean's earliest commit to retain and the new one: in the window."""
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    _write(t, {0, 1, 2}, 1)
    _write(t, {0}, 2)
    _write(t, {0}, 3)
    _write(t, {1}, 4)
    _write(t, {1}, 5)
    keep3 = {"hoodie__cleaner__commits__retained": 3}
    first, files, _ = _both_plans(t, **keep3)  # retains steps 3 to 5, and step 2's slice of partition 0
    la = f"city={CITIES[0]}"
    assert list(files) == [la]
    run_clean(t.table(), first.instant)
    # No write since: under the same retention nothing more is cleanable; retaining 1 commit, step 2's slice of
    # partition 0 is (step 3's slice, which supersedes it, is now older than the earliest commit to retain)
    assert _both_plans(t, **keep3)[1:] == ("nothing to clean: no file slice older than the earliest commit to "
                                           f"retain ({last_clean(t.table()).earliest_commit_to_retain}) that a "
                                           "newer slice before it supersedes and no pending plan or savepoint "
                                           "keeps",) * 2
    incremental, files, full_files = _both_plans(t, **KEEP1)
    assert files == full_files and la in files
    run_clean(t.table(), incremental.instant)
    t.check(hudi_rs=False)


def test_incremental_clean_by_hours_plans_what_a_full_scan_plans(tmp_path):
    """KEEP_LATEST_BY_HOURS keeps the last slice before the earliest commit to retain, as Hudi's CleanPlanner does:
    a partition written only after that commit holds nothing cleanable yet, for the full scan as for the
    incremental window that leaves it out."""
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    _write(t, {0, 1, 2}, 1)
    _write(t, {1}, 2)
    third = _write(t, {1}, 3)
    zone = t.table().config.timeline_zone
    hours = {"hoodie__cleaner__policy": "KEEP_LATEST_BY_HOURS", "hoodie__cleaner__hours__retained": 1}

    def both(at: str) -> tuple[Planned | str, object, object]:
        """_both_plans an hour after the instant `at`: `at` is the earliest commit to retain."""
        when = instant_to_datetime(at, zone) + timedelta(hours=1)
        full = plan_clean_or_why(t.table(), policy(hoodie__cleaner__incremental__mode=False, **hours), when)
        full_files = _plan_files(t, full)
        if isinstance(full, Planned):
            t.table().timeline.delete_pending(full.instant)
        incremental = plan_clean_or_why(t.table(), policy(**hours), when)
        return incremental, _plan_files(t, incremental), full_files
    first, files, full_files = both(third)
    assert files == full_files and list(files) == [f"city={CITIES[1]}"]
    run_clean(t.table(), first.instant)
    fourth = _write(t, {0}, 4)  # partition 0's second slice, newer than the next earliest commit to retain
    _write(t, {1}, 5)
    second, files, full_files = both(fourth)  # the window: the commit of step 3 (partition 1)
    assert files == full_files and list(files) == [f"city={CITIES[1]}"]
    run_clean(t.table(), second.instant)
    t.check(hudi_rs=False)


def test_incremental_clean_looks_again_at_the_partitions_of_a_deleted_savepoint(tmp_path):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    _write(t, {0, 1, 2}, 1)
    kept = _write(t, {0, 1, 2}, 2)
    _write(t, {0, 1, 2}, 3)
    create_savepoint(t.table(), kept)
    _write(t, {0}, 4)
    run_clean(t.table(), plan_clean_or_why(t.table(), policy(**KEEP1), now()).instant)
    assert last_clean(t.table()).extra_metadata["savepointed_timestamps"] == kept
    t.table().timeline.delete_savepoint(kept)
    _write(t, {0}, 5)  # the window holds only the commit of step 4: partition 0

    incremental, files, full_files = _both_plans(t, **KEEP1)
    assert files == full_files and len(files) == 3, "the savepoint's partitions are looked at again"


VERSIONS1 = {"hoodie__cleaner__policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie__cleaner__fileversions__retained": 1}


@pytest.mark.parametrize("retention", [KEEP1, VERSIONS1], ids=["commits", "versions"])
def test_a_bounded_clean_is_several_plans_that_delete_what_one_would(tmp_path, retention):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    for step in range(1, 6):
        _write(t, {0, 1, 2}, step)
    unbounded = plan_clean_or_why(t.table(), policy(**retention, tms__clean__max__files__per__plan=0), now())
    expected = sorted(f for fs in _plan_files(t, unbounded).values() for f in fs)
    earliest = parse_cleaner_plan(t.table().timeline.read_plan(unbounded.instant)).earliest_instant_to_retain
    t.table().timeline.delete_pending(unbounded.instant)
    assert len(expected) > 4 and len({f.rsplit("/", 2)[-2] for f in expected}) == 3

    deleted: list[str] = []
    plans = 0
    bound = policy(**retention, tms__clean__max__files__per__plan=2)
    while isinstance(planned := plan_clean_or_why(t.table(), bound, now()), Planned):
        files = [f for fs in _plan_files(t, planned).values() for f in fs]
        assert 0 < len(files) <= 2
        plan = parse_cleaner_plan(t.table().timeline.read_plan(planned.instant))
        assert plan.earliest_instant_to_retain == earliest, "every part cleans to the same instant"
        deleted += files
        run_clean(t.table(), planned.instant)
        plans += 1
        t.check()  # each plan leaves a table readers read (hudi-rs too)
    assert plans == -(-len(expected) // 2) and sorted(deleted) == expected
    assert RESUME_FROM not in last_clean(t.table()).extra_metadata, "the last plan finished the clean"
