"""The library reads every table written by Spark + Hudi exactly as hudi-rs does."""
import pytest
from hudi import HudiTableBuilder
from support import FIXTURE_TABLES, hudi_rs_table, rows

from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State, parse_instant_file_name

EXPECTED_ROWS = {
    "cow_v6_nonpartitioned": 4,
    "cow_v6_simplekeygen_nonhivestyle_overwritetable": 1,
    "cow_v8_nonpartitioned": 4,
    "mor_v6_nonpartitioned_rollback": 3,
    "mor_v6_trips_8i1u": 8,
    "mor_v8_trips_8i3u1d": 6,
    "cow_v9_txns_simple_meta": 12,
    "mor_v9_txns_simple_meta": 12,
    "mor_v9_txns_simple_nometa": 12,
    "cow_v6_timebasedkeygen_nonhivestyle": 4,
    "cow_v9_lance_nonpartitioned": 9,
    "cow_v6_simplekeygen_hivestyle_no_metafields": 4,
}


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLES))
def test_snapshot_rows_match_hudi_rs(fixture_tables, name):
    path = fixture_tables[name]
    ours = read_snapshot(HudiTable.load(str(path)))
    theirs = hudi_rs_table(path)
    assert ours.num_rows == EXPECTED_ROWS[name]
    assert rows(ours) == rows(theirs)


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLES))
def test_time_travel_matches_hudi_rs(fixture_tables, name):
    path = fixture_tables[name]
    table = HudiTable.load(str(path))
    for inst in table.timeline.completed_writes():
        ours = read_snapshot(table, as_of=inst.timestamp)
        assert rows(ours) == rows(hudi_rs_table(path, as_of=inst.timestamp)), inst


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLES))
def test_timeline_matches_files_on_disk(fixture_tables, name):
    path = fixture_tables[name]
    table = HudiTable.load(str(path))
    folder = path / table.config.timeline_dir
    on_disk = sorted(i for i in (parse_instant_file_name(p.name) for p in folder.iterdir() if p.is_file()) if i)
    assert table.timeline.all_files() == on_disk
    # every instant appears once in its latest state, in instant-time order
    latest = table.timeline.instants()
    assert [i.timestamp for i in latest] == sorted({i.timestamp for i in on_disk})
    for inst in latest:
        assert inst.state == max(i.state for i in on_disk if i.timestamp == inst.timestamp)
    # completed writes are the commits hudi-rs loads
    ref = HudiTableBuilder.from_base_uri(str(path)).build().get_timeline()
    ref_commits = sorted(i.timestamp for i in ref.get_completed_commits() + ref.get_completed_deltacommits()
                         + ref.get_completed_replacecommits())
    assert sorted(i.timestamp for i in table.timeline.completed_writes()) == ref_commits
    if table.config.version >= 8:
        assert all(i.completion_time for i in latest if i.state is State.COMPLETED)


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLES))
def test_file_slices_match_hudi_rs(fixture_tables, name):
    path = fixture_tables[name]
    view = HudiTable.load(str(path)).file_system_view()
    ours = sorted((fs.partition, fs.file_id, fs.base_file.file_name if fs.base_file else "",
                   tuple(f.file_name for f in fs.log_files)) for fs in view.merged_latest_slices())
    ref = HudiTableBuilder.from_base_uri(str(path)).build().get_file_slices()
    theirs = sorted((s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in ref)
    assert ours == theirs
    for fs in view.latest_slices():
        if fs.base_file:
            assert BaseFileName.parse(fs.base_file.file_name).file_id == fs.file_id
            assert (path / fs.base_file.path).stat().st_size == fs.base_file.size
        for lf in fs.log_files:
            assert LogFileName.parse(lf.file_name).file_id == fs.file_id


def test_replaced_file_groups_are_excluded(fixture_tables):
    path = fixture_tables["cow_v6_simplekeygen_nonhivestyle_overwritetable"]
    view = HudiTable.load(str(path)).file_system_view()
    assert view.replaced, "the insert_overwrite_table replacecommit replaces file groups"
    visible = {(g.partition, g.file_id) for g in view.file_groups()}
    assert not visible & set(view.replaced)


def test_rolled_back_delta_commit_is_invisible(fixture_tables):
    path = fixture_tables["mor_v6_nonpartitioned_rollback"]
    table = HudiTable.load(str(path))
    [rollback] = table.timeline.completed(["rollback"])
    # the rolled-back instant is gone from the timeline, and its parquet block does not show up
    assert not table.timeline.states_of("20250126040826878")
    assert {r["_hoodie_commit_time"] for r in rows(read_snapshot(table))} <= {
        i.timestamp for i in table.timeline.completed_writes()}


def test_file_group_stats(fixture_tables):
    view = HudiTable.load(str(fixture_tables["mor_v6_trips_8i1u"])).file_system_view()
    stats = {s.partition: s for s in view.file_group_stats()}
    assert set(stats) == {"city=chennai", "city=san_francisco", "city=sao_paulo"}
    sf = stats["city=san_francisco"]
    assert sf.log_count == 1 and sf.log_bytes > 0 and sf.base_size > 0
    assert stats["city=chennai"].log_count == 0
    assert sum(s.num_records for s in stats.values()) == 8


def test_virtual_keys_read_without_meta_columns_as_hudi_readers_return(fixture_tables):
    """`hoodie.populate.meta.fields=false`: the files hold null `_hoodie_*` columns; `tms read` (like hudi-rs
    and Java's readers) returns the data columns only."""
    import json

    from typer.testing import CliRunner

    from tms.cli import app
    path = fixture_tables["cow_v6_simplekeygen_hivestyle_no_metafields"]
    result = CliRunner().invoke(app, ["read", str(path)])
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    theirs = hudi_rs_table(path)
    assert len(printed) == theirs.num_rows == 4
    assert all(set(r) == set(theirs.column_names) for r in printed)
    assert not any(c.startswith("_hoodie_") for c in theirs.column_names)
    assert sorted(r["id"] for r in printed) == sorted(theirs.column("id").to_pylist())


def test_hadoop_checksum_files_are_invisible(fixture_tables, tmp_path):
    """A table Java Hudi wrote on a local filesystem has Hadoop's `.<file>.crc` beside every file, hidden from
    Hudi by Hadoop's listing. TMS sees the same file slices and rows as without them (found by the Java
    harness: `..<fileId>_<instant>.log.1_0-1-2.crc` was taken for a log file of a file group `.<fileId>`)."""
    from support import copy_table

    from tms.hudi.metadata.listing import committed_files
    path = copy_table(fixture_tables["mor_v8_trips_8i3u1d"], tmp_path / "t")
    before = HudiTable.load(str(path))
    slices = sorted(map(repr, before.file_system_view().latest_slices()))
    files, snapshot = committed_files(before), rows(read_snapshot(before))
    for file in [p for p in path.rglob("*") if p.is_file()]:
        (file.parent / f".{file.name}.crc").write_bytes(b"crc\x00")
    after = HudiTable.load(str(path))
    assert any(p.name.startswith("..") for p in path.rglob("*.log.*.crc")), "the fixture has log files"
    assert sorted(map(repr, after.file_system_view().latest_slices())) == slices
    assert committed_files(after) == files
    assert rows(read_snapshot(after)) == snapshot
    # A file TMS changes or removes loses its checksum, which would be stale (Hadoop fails a read it cannot
    # verify, and reads a file without one unchecked).
    log = next(p for p in path.rglob(".*.log.*") if not p.name.endswith(".crc"))
    base = next(p for p in path.rglob("*.parquet") if not p.name.startswith("."))
    after.storage.append(str(log.relative_to(path)), b"")
    after.storage.delete(str(base.relative_to(path)))
    assert not (log.parent / f".{log.name}.crc").exists() and not (base.parent / f".{base.name}.crc").exists()
