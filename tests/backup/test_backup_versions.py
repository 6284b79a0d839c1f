"""Backup versions of a table written over three (simulated) days: each version, restored to a new path,
reads (hudi-rs and TMS's reader) as the model at its instant; versions beyond the kept count are gone and
the kept ones still read; each version copies about the day's changes, not the table."""
from __future__ import annotations

import pytest
from support import hudi_rs_table, rows
from table_model import COLUMNS, ModelledTable, rec

from tms.backup.errors import BackupError
from tms.backup.expire import expire_versions
from tms.backup.layout import BackupStore
from tms.backup.restore import restore_version
from tms.backup.take import take_backup
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable

ROWS_PER_DAY = 30


def _day(table: ModelledTable, day: int) -> str:
    """One day's writes: new rows and updates of a few of yesterday's."""
    first = day * ROWS_PER_DAY
    instant = table.write([rec(i, day) for i in range(first, first + ROWS_PER_DAY)])
    table.model.commit(instant)
    if day:
        instant = table.write([rec(i, day, name=f"updated-{day}") for i in range(first - 3, first)])
        table.model.commit(instant)
    return instant


def _reads_as(path, expected) -> None:
    assert rows(read_snapshot(HudiTable.load(str(path))), COLUMNS) == expected
    assert rows(hudi_rs_table(path), COLUMNS) == expected


@pytest.mark.parametrize("table_type,version", [("MERGE_ON_READ", 6), ("COPY_ON_WRITE", 8)])
def test_daily_backups_read_as_the_model_and_copy_the_days_changes(tmp_path, table_type, version):
    table = ModelledTable(tmp_path / "t", table_type=table_type, version=version)
    store = BackupStore(str(tmp_path / "backups" / "t-1"))
    instants, results = [], []
    for day in range(3):
        instants.append(_day(table, day))
        results.append(take_backup(table.table(), store))
    assert [r.manifest.version for r in results] == [1, 2, 3]
    assert [r.manifest.instant for r in results] == instants
    # Day 2 and 3 copy exactly the files that are new since the previous version (the day's data files and
    # instants); on a merge-on-read table, whose updates append log files, far fewer bytes than it holds.
    for before, r in zip(results, results[1:], strict=False):
        new = {rel: f.size for rel, f in r.manifest.files.items()
               if rel not in before.manifest.files or before.manifest.files[rel].size != f.size}
        assert r.manifest.bytes_copied == sum(new.values()) and r.manifest.files_copied == len(new)
        assert 0 < r.manifest.bytes_copied < r.manifest.total_bytes, r.summary()
        if table_type == "MERGE_ON_READ":
            assert r.manifest.bytes_copied < r.manifest.total_bytes * 0.6, r.summary()
    for version_no, instant in zip((1, 2, 3), instants, strict=True):
        target = tmp_path / f"restored-{version_no}"
        restore_version(store, version_no, str(target))
        _reads_as(target, table.model.expected(as_of=instant))

    expired = expire_versions(store, keep_versions=2)
    assert expired.expired == (1,) and expired.kept == (2, 3)
    assert store.versions() == [2, 3]
    with pytest.raises(BackupError, match="version 1 does not exist"):
        restore_version(store, 1, str(tmp_path / "gone"))
    for version_no, instant in ((2, instants[1]), (3, instants[2])):  # the kept ones still read
        target = tmp_path / f"after-clean-{version_no}"
        restore_version(store, version_no, str(target))
        _reads_as(target, table.model.expected(as_of=instant))


def test_a_version_leaves_out_writes_not_completed(tmp_path):
    table = ModelledTable(tmp_path / "t")
    done = _day(table, 0)
    table.write([rec(i, 5) for i in range(100, 110)], leave_inflight=True)
    store = BackupStore(str(tmp_path / "b"))
    manifest = take_backup(table.table(), store).manifest
    assert manifest.instant == done
    restore_version(store, 1, str(tmp_path / "r"))
    _reads_as(tmp_path / "r", table.model.expected(as_of=done))


def test_restore_refuses_a_target_that_holds_files(tmp_path):
    table = ModelledTable(tmp_path / "t")
    _day(table, 0)
    store = BackupStore(str(tmp_path / "b"))
    take_backup(table.table(), store)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    with pytest.raises(BackupError, match="not empty"):
        restore_version(store, 1, str(tmp_path / "busy"))
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["x"]


def test_backups_to_an_s3_destination_restore_and_read(tmp_path, s3_endpoint, s3_base):
    table = ModelledTable(tmp_path / "t")
    first = _day(table, 0)
    store = BackupStore(f"{s3_base}/backups/t-1")
    take_backup(table.table(), store)
    second = _day(table, 1)
    take_backup(table.table(), store)
    prefix = s3_base.split("/", 3)[3]
    keys = s3_endpoint.keys(f"{prefix}/backups/t-1/versions/")
    assert [k.rsplit("/", 1)[1] for k in keys] == ["1.json", "2.json"]
    for version_no, instant in ((1, first), (2, second)):
        target = tmp_path / f"restored-{version_no}"
        restore_version(BackupStore(f"{s3_base}/backups/t-1"), version_no, str(target))
        _reads_as(target, table.model.expected(as_of=instant))


def test_a_table_with_a_metadata_table_restores_without_it_and_reads(tmp_path):
    from tms.hudi.metadata.init import create_metadata_table

    table = ModelledTable(tmp_path / "t", table_type="MERGE_ON_READ", version=8)
    create_metadata_table(table.writer.table, ["files"])
    done = _day(table, 0)
    assert (tmp_path / "t" / ".hoodie" / "metadata").is_dir()
    store = BackupStore(str(tmp_path / "b"))
    manifest = take_backup(table.table(), store).manifest
    assert not [rel for rel in manifest.files if rel.startswith(".hoodie/metadata/")]
    restore_version(store, 1, str(tmp_path / "r"))
    assert "hoodie.table.metadata.partitions=" not in (tmp_path / "r" / ".hoodie" / "hoodie.properties").read_text()
    _reads_as(tmp_path / "r", table.model.expected(as_of=done))


def test_a_restore_that_stopped_halfway_goes_on_and_refuses_what_it_did_not_copy(tmp_path):
    table = ModelledTable(tmp_path / "t")
    done = _day(table, 0)
    store = BackupStore(str(tmp_path / "b"))
    take_backup(table.table(), store)
    target = tmp_path / "r"
    restore_version(store, 1, str(target))
    (target / ".hoodie" / "hoodie.properties").unlink()  # what an attempt that stopped before its end leaves
    next(p for p in target.rglob("*.parquet")).unlink()
    restore_version(store, 1, str(target))  # its retry
    _reads_as(target, table.model.expected(as_of=done))
    (target / ".hoodie" / "hoodie.properties").unlink()
    (target / "stranger.txt").write_text("not of the backup")
    with pytest.raises(BackupError, match="not empty .*stranger.txt"):
        restore_version(store, 1, str(target))


@pytest.mark.parametrize("table_type,version", [("MERGE_ON_READ", 6), ("COPY_ON_WRITE", 8)])
def test_a_restored_version_catches_up_with_the_tables_later_instants(tmp_path, table_type, version):
    table = ModelledTable(tmp_path / "t", table_type=table_type, version=version)
    store = BackupStore(str(tmp_path / "b"))
    first = _day(table, 0)
    take_backup(table.table(), store)
    _day(table, 1)
    _day(table, 2)  # updates of day 1's rows: a v6 log file grows, a v8 base file is rewritten
    assert table.model.expected() != table.model.expected(as_of=first)

    caught = restore_version(store, 1, str(tmp_path / "caught"), catch_up=table.table())
    _reads_as(tmp_path / "caught", table.model.expected())
    assert caught.caught_up_to == table.table().timeline.last_completed().timestamp and caught.instant == first
    # The version's files came from the backup, the later instants' from the table.
    assert 0 < caught.files_from_source < caught.files
    plain = restore_version(store, 1, str(tmp_path / "plain"))
    _reads_as(tmp_path / "plain", table.model.expected(as_of=first))
    assert plain.caught_up_to is None

    other = ModelledTable(tmp_path / "other")
    _day(other, 0)
    with pytest.raises(BackupError, match="not of"):
        restore_version(store, 1, str(tmp_path / "wrong"), catch_up=other.table())
    assert not (tmp_path / "wrong").exists()
