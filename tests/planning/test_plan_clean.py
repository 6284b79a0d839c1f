"""Clean: each cleaner policy's retention, Hudi's earliest instant to retain, and the slices no policy may
delete (latest, needed by a pending compaction, by a pending write, replaced file groups' timing)."""
import shutil
from datetime import timedelta

import pytest
from planning_support import (
    ModelledTable,
    now,
    policy,
    rec,
    run_clean,
    run_compaction,
    set_timeline_zone,
    told_writers_zone,
    writes_in,
)

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, instant_to_datetime
from tms.hudi.timeline.serde import parse_cleaner_plan
from tms.planning.clean import earliest_instant_to_retain, plan_clean
from tms.planning.compaction import plan_compaction
from tms.planning.stats import plan_stats

COMMITS = "KEEP_LATEST_COMMITS"
VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
HOURS = "KEEP_LATEST_BY_HOURS"


def _versions(tmp_path, table_type="COPY_ON_WRITE", version=6, commits=5) -> tuple[ModelledTable, list[str]]:
    """One file group rewritten by every commit: as many file versions (slices) as commits."""
    t = ModelledTable(tmp_path / "t", table_type=table_type, version=version, partitioned=False)
    instants = [t.write([rec(0, 10), rec(1, 10)], "insert")]
    instants += [t.write([rec(0, 10 + n)]) for n in range(1, commits)]
    return t, instants


def _doomed(t: ModelledTable, planned) -> dict[str, list[str]]:
    plan = parse_cleaner_plan(t.table().timeline.read_plan(planned.instant))
    return {p: sorted(info.file_path.rsplit("/", 1)[-1] for info in infos)
            for p, infos in plan.file_paths_to_be_deleted_per_partition.items()}


def _base_files(t: ModelledTable, instants: list[str]) -> list[str]:
    slices = {fs.base_instant: fs for g in t.table().file_system_view().file_groups() for fs in g.slices}
    return sorted(slices[i].base_file.file_name for i in instants)


def test_keep_latest_commits(tmp_path):
    t, c = _versions(tmp_path)
    keep2 = policy(hoodie__cleaner__policy=COMMITS, hoodie__cleaner__commits__retained=2)
    assert earliest_instant_to_retain(t.table(), keep2, now()).timestamp == c[3]
    expected = _base_files(t, c[:2])  # c[2] stays: the last version before the earliest instant to retain
    planned = plan_clean(t.table(), keep2, now())
    assert _doomed(t, planned) == {"": expected}
    plan = parse_cleaner_plan(t.table().timeline.read_plan(planned.instant))
    assert (plan.policy, plan.version, plan.last_completed_commit_timestamp) == (COMMITS, 2, c[-1])
    assert (plan.earliest_instant_to_retain.timestamp, plan.earliest_instant_to_retain.action,
            plan.earliest_instant_to_retain.state) == (c[3], "commit", "COMPLETED")
    assert all(i.file_path.startswith(t.table().base_path + "/") for infos in
               plan.file_paths_to_be_deleted_per_partition.values() for i in infos)
    assert planned.stats == plan_stats(t.table(), planned.instant) and planned.stats.operations == 1
    assert plan_clean(t.table(), keep2, now()) is None, "one clean at a time"
    run_clean(t.table(), planned.instant)
    t.check()
    assert plan_clean(t.table(), policy(hoodie__cleaner__policy=COMMITS, hoodie__cleaner__commits__retained=5),
                      now()) is None


def test_earliest_instant_to_retain_stops_at_the_earliest_pending_write(tmp_path):
    t, c = _versions(tmp_path, commits=3)
    pending = t.write([rec(1, 50)], leave_inflight=True)
    c += [t.write([rec(0, 60)]), t.write([rec(0, 70)])]
    keep1 = policy(hoodie__cleaner__policy=COMMITS, hoodie__cleaner__commits__retained=1)
    assert earliest_instant_to_retain(t.table(), keep1, now()).timestamp == c[2] < pending
    assert _doomed(t, plan_clean(t.table(), keep1, now())) == {"": _base_files(t, c[:1])}


def test_keep_latest_file_versions(tmp_path):
    t, c = _versions(tmp_path)
    planned = plan_clean(t.table(), policy(hoodie__cleaner__policy=VERSIONS,
                                           hoodie__cleaner__fileversions__retained=2), now())
    assert _doomed(t, planned) == {"": _base_files(t, c[:3])}
    assert parse_cleaner_plan(t.table().timeline.read_plan(planned.instant)).earliest_instant_to_retain is None
    run_clean(t.table(), planned.instant)
    t.check()


def test_keep_latest_by_hours(tmp_path):
    t, c = _versions(tmp_path)
    hour = policy(hoodie__cleaner__policy=HOURS, hoodie__cleaner__hours__retained=1)
    assert plan_clean(t.table(), hour, now()) is None, "every commit is within the last hour"
    an_hour_after_c3 = instant_to_datetime(c[3], t.table().config.timeline_zone) + timedelta(hours=1)
    assert earliest_instant_to_retain(t.table(), hour, an_hour_after_c3).timestamp == c[3]
    planned = plan_clean(t.table(), hour, an_hour_after_c3)
    # c[2] stays: the last version before the earliest instant to retain, as Hudi's CleanPlanner keeps it
    assert _doomed(t, planned) == {"": _base_files(t, c[:2])}
    run_clean(t.table(), planned.instant)
    t.check()


@pytest.mark.parametrize("timeline,writers", [("LOCAL", "Asia/Shanghai"), ("UTC", "UTC")])
def test_keep_latest_by_hours_counts_in_the_writers_zone(tmp_path, timeline, writers):
    """Writers in Shanghai on a LOCAL table (TMS told so): the last hour holds exactly the commits written in
    it (read as UTC times, every commit would be in the future and none cleaned)."""
    t = ModelledTable(tmp_path / "t", table_type="COPY_ON_WRITE", partitioned=False,
                      context=told_writers_zone("Asia/Shanghai"))
    set_timeline_zone(t, timeline)
    writer = writes_in(t, writers)
    c = []
    for n, minutes_ago in enumerate((300, 180, 70, 50, 10)):
        writer.ago = timedelta(minutes=minutes_ago)
        c.append(t.write([rec(0, 10), rec(1, 10)], "insert") if n == 0 else t.write([rec(0, 10 + n)]))
    hour = policy(hoodie__cleaner__policy=HOURS, hoodie__cleaner__hours__retained=1)
    assert earliest_instant_to_retain(t.table(), hour, now()).timestamp == c[3]
    planned = plan_clean(t.table(), hour, now())
    assert _doomed(t, planned) == {"": _base_files(t, c[:2])}
    run_clean(t.table(), planned.instant)
    t.check()


def test_slice_a_pending_write_works_from_is_kept(tmp_path):
    t, c = _versions(tmp_path, commits=3)
    t.write([rec(1, 50)], leave_inflight=True)  # started from slice c[2]
    c.append(t.write([rec(0, 60)]))
    planned = plan_clean(t.table(), policy(hoodie__cleaner__policy=VERSIONS,
                                           hoodie__cleaner__fileversions__retained=1), now())
    assert _doomed(t, planned) == {"": _base_files(t, c[:2])}


def test_merge_on_read_slices_go_with_their_logs_but_not_one_a_compaction_needs(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6, partitioned=False)
    t.write([rec(i, 10) for i in range(3)], "insert")
    t.write([rec(0, 20)])
    every = policy(hoodie__compact__inline__max__delta__commits=1)
    run_compaction(t.table(), plan_compaction(t.table(), every, now()).instant)
    t.write([rec(1, 30)])
    pending = plan_compaction(t.table(), every, now())  # plans the second slice
    t.write([rec(2, 40)])
    group = t.table().file_system_view().file_groups()[0]
    assert [bool(s.base_file) for s in group.slices] == [True, True, False]
    first = group.slices[0]
    planned = plan_clean(t.table(), policy(hoodie__cleaner__policy=VERSIONS,
                                           hoodie__cleaner__fileversions__retained=1), now())
    assert _doomed(t, planned)[""] == sorted([first.base_file.file_name] + [f.file_name for f in first.log_files])
    assert planned.stats == plan_stats(t.table(), planned.instant), "the planner's sizes are the listing's"
    run_clean(t.table(), planned.instant)
    run_compaction(t.table(), pending.instant)
    t.check()


def test_replaced_file_groups_are_cleaned(tmp_path, fixture_tables):
    path = shutil.copytree(fixture_tables["cow_v6_simplekeygen_nonhivestyle_overwritetable"], tmp_path / "t")
    table = HudiTable.load(str(path))
    view = table.file_system_view()
    replaced = view.replaced_file_groups()
    assert replaced
    planned = plan_clean(table, policy(hoodie__cleaner__policy=VERSIONS), now())
    plan = parse_cleaner_plan(HudiTable.load(str(path)).timeline.read_plan(planned.instant))
    doomed = {i.file_path.rsplit("/", 1)[-1] for infos in plan.file_paths_to_be_deleted_per_partition.values()
              for i in infos}
    assert doomed == {fs.base_file.file_name for g in replaced for fs in g.slices}
    assert planned.stats == plan_stats(HudiTable.load(str(path)), planned.instant)
    assert plan_clean(HudiTable.load(str(path)), policy(hoodie__cleaner__policy=COMMITS), now()) is None


def test_replaced_file_groups_are_cleaned_while_a_newer_write_is_in_flight(tmp_path, fixture_tables):
    path = shutil.copytree(fixture_tables["cow_v6_simplekeygen_nonhivestyle_overwritetable"], tmp_path / "t")
    table = HudiTable.load(str(path))
    replaced = table.file_system_view().replaced_file_groups()
    # A streaming writer's commit in flight: it works from the live file groups, never from the replaced ones.
    table.timeline.transition_to_inflight(table.timeline.create_requested(Action.COMMIT))
    planned = plan_clean(HudiTable.load(str(path)), policy(hoodie__cleaner__policy=VERSIONS), now())
    plan = parse_cleaner_plan(HudiTable.load(str(path)).timeline.read_plan(planned.instant))
    doomed = {i.file_path.rsplit("/", 1)[-1] for infos in plan.file_paths_to_be_deleted_per_partition.values()
              for i in infos}
    assert doomed == {fs.base_file.file_name for g in replaced for fs in g.slices}



@pytest.mark.parametrize("version", [6, 8])
def test_slice_a_tms_savepoint_keeps_is_not_cleaned(tmp_path, version):
    from tms.hudi.table.savepoint import create_savepoint, delete_savepoint
    t, c = _versions(tmp_path, version=version)
    create_savepoint(t.table(), c[1])
    keep1 = policy(hoodie__cleaner__policy=VERSIONS, hoodie__cleaner__fileversions__retained=1)
    planned = plan_clean(t.table(), keep1, now())
    assert _doomed(t, planned) == {"": _base_files(t, [c[0], c[2], c[3]])}  # c[1]'s slice stays
    run_clean(t.table(), planned.instant)
    delete_savepoint(t.table(), c[1])
    assert _doomed(t, plan_clean(t.table(), keep1, now())) == {"": _base_files(t, [c[1]])}


@pytest.mark.parametrize("version", [6, 8])
def test_a_commit_naming_a_partition_outside_the_table_stops_the_clean_plan_before_it_is_written(tmp_path, version):
    """The partitions a commit names are input: one that leads outside the table is refused where it is listed,
    and no clean plan is written."""
    from tms.hudi.storage.paths import PathOutsideTableError
    from tms.hudi.timeline.serde import CommitMetadata, WriteStat, serialize_commit_metadata

    t, _ = _versions(tmp_path, version=version)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.parquet").write_bytes(b"x")
    tl = t.table().timeline
    stat = WriteStat(file_id="f-0", path="../outside/victim.parquet", partition_path="../outside")
    meta = CommitMetadata(partition_to_write_stats={"../outside": [stat]}, operation_type="UPSERT")
    tl.complete(tl.transition_to_inflight(tl.create_requested(Action.COMMIT)), serialize_commit_metadata(meta, version))
    with pytest.raises(PathOutsideTableError):
        plan_clean(t.table(), policy(hoodie__cleaner__policy=VERSIONS), now())
    assert (tmp_path / "outside" / "victim.parquet").exists()
    assert not t.table().timeline.pending((Action.CLEAN,)) and not t.table().timeline.completed((Action.CLEAN,))
