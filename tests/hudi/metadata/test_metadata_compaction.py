"""The metadata table's own compaction (tms.hudi.metadata.compaction): run before an MDT delta commit once
`hoodie.metadata.compact.max.delta.commits` follow the last one, every partition's slices with log files merged
into new base HFiles, readers (TMS's, hudi-rs, `tms verify`) reading what they read before; held back while an
MDT delta commit is not settled; a crashed one finished from its plan."""
from __future__ import annotations

import pytest
from mdt_model import MdtModelledTable
from table_model import rec

from tms.hudi.metadata import keys as K
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import parse_commit_metadata


def _mdt(t: MdtModelledTable) -> HudiTable:
    return MetadataTable(t.table()).table


def _compactions(t: MdtModelledTable) -> list[str]:
    return [i.timestamp for i in _mdt(t).timeline.completed((Action.COMMIT,))]


def _write(t: MdtModelledTable, n: int, start: int = 0) -> None:
    for step in range(start, start + n):
        t.write([rec(i, step + 1) for i in range(step % 4, 40, 4)])


@pytest.mark.parametrize("version", [6, 8, 9])
def test_the_tenth_delta_commit_after_the_last_compaction_is_followed_by_one_that_reads_the_same(tmp_path, version):
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", version, partitions=list(K_PARTITIONS))
    _write(t, 9)   # with the first insert: 10 delta commits on the MDT, none compacted yet
    assert _compactions(t) == []
    before = {p: MetadataTable(t.table()).records(p) for p in K_PARTITIONS}
    _write(t, 1, start=9)   # its MDT delta commit is the 11th: the compaction comes first
    [compaction] = _compactions(t)
    mdt = MetadataTable(t.table())
    for part in K_PARTITIONS:
        slices = mdt.file_slices(part)
        assert all(fs.base_instant == compaction for fs in slices), part
        # only the delta commit written after the compaction is in a log file
        assert sum(len(fs.log_files) for fs in slices) <= len(slices)
    meta = parse_commit_metadata(mdt.table.timeline.read(mdt.table.timeline.get(compaction)))
    assert meta.operation_type == "COMPACT" and meta.compacted
    compacted = {s.file_id for stats in meta.partition_to_write_stats.values() for s in stats}
    assert compacted == {fs.file_id for p in K_PARTITIONS for fs in mdt.file_slices(p)}
    if version == 6:
        assert compaction.endswith("001") and len(compaction) == 20
    t.check()   # TMS's reader, `tms verify` and hudi-rs (with and without the MDT) read the model
    after = {p: MetadataTable(t.table()).records(p) for p in K_PARTITIONS}
    assert len(after[K.RECORD_INDEX]) == len(before[K.RECORD_INDEX]) == len(t.model.expected())
    # On version 8+ the delta commit of the write under way when the MDT compacted (its data instant older than
    # the compaction's) counts as before it, as Hudi counts by instant time: 11 writes to the next
    _write(t, 11, start=10)
    assert len(_compactions(t)) == 2
    t.check()


K_PARTITIONS = (K.FILES, K.COLUMN_STATS, K.RECORD_INDEX)


def test_no_compaction_while_a_data_instant_with_an_mdt_delta_commit_is_pending(tmp_path):
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    _write(t, 8)
    pending = t.write([rec(1, 100)], leave_inflight=True)   # its MDT delta commit completed, the data one not
    assert MetadataTable(t.table()).table.timeline.is_completed(pending)
    _write(t, 3, start=20)
    assert _compactions(t) == []   # its blocks would have been left out of the base for good
    t.complete(pending)
    _write(t, 1, start=30)
    assert len(_compactions(t)) == 1
    t.check()


def test_a_compaction_left_pending_is_finished_from_its_plan_before_the_next_delta_commit(tmp_path, monkeypatch):
    from tms.hudi.metadata import compaction
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    _write(t, 9)
    real = compaction.write_hfile
    written = []

    def crash_after_one(*args, **kwargs):
        if written:
            raise OSError("killed")
        written.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compaction, "write_hfile", crash_after_one)
    with pytest.raises(OSError):
        t.write([rec(1, 50)])
    monkeypatch.undo()
    mdt = _mdt(t)
    [pending] = mdt.timeline.pending((Action.COMPACTION,))
    assert pending.state is State.INFLIGHT
    t.writer.table = HudiTable.load(str(t.path), context=t.writer.table.context)
    _write(t, 1, start=40)
    assert _compactions(t) == [pending.timestamp]
    t.check()


@pytest.mark.parametrize("version", [6, 9])
def test_slices_older_than_the_commits_the_mdt_retains_are_cleaned_after_its_compactions(tmp_path, version):
    from tms.hudi.metadata.clean import commits_retained
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", version, partitions=list(K_PARTITIONS))
    _write(t, 40)
    mdt = _mdt(t)
    cleans = mdt.timeline.completed((Action.CLEAN,))
    assert len(_compactions(t)) >= 3 and cleans
    assert commits_retained(t.table()) == 20
    last = _clean_metadata(mdt, cleans[-1])
    # the commits completed when it planned (v8+: by completion time; the write under way then has an older
    # instant time than the clean's)
    commits = mdt.timeline.completed((Action.COMMIT, Action.DELTA_COMMIT))
    retained = [i.timestamp for i in commits if (i.completion_time or i.timestamp) < last.start_clean_time][-20]
    assert last.earliest_commit_to_retain == retained   # the 20th newest commit when it planned
    view = MetadataTable(t.table())
    for part in K_PARTITIONS:
        for group in view.view.file_groups(part):
            # left by the last clean: the slice a reader of the retained commits may still read, no older one
            old = [fs.base_instant for fs in group.slices if fs.base_instant < retained]
            assert len(old) <= 1, (part, group.file_id, [fs.base_instant for fs in group.slices])
    assert any(m.success_delete_files for m in last.partition_metadata.values())
    t.check()


def _clean_metadata(mdt: HudiTable, clean):
    from tms.hudi.timeline.serde import parse_clean_metadata
    return parse_clean_metadata(mdt.timeline.read(clean))


def _table_files(path) -> dict[str, bytes]:
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}


@pytest.mark.parametrize("hostile", ["partition", "file group", "base file", "log file"])
def test_a_pending_compaction_plan_naming_what_is_not_the_mdts_is_refused_before_anything_is_written(tmp_path,
                                                                                                      hostile):
    """A compaction plan left on the MDT timeline is input: one naming the MDT's own `.hoodie` folder, a file group
    it does not have, or another group's files is refused in one line; no file is written or deleted."""
    from tms.hudi.errors import HudiError
    from tms.hudi.timeline.serde import CompactionOperation, CompactionPlan, serialize_compaction_plan
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8, partitions=[K.FILES])
    _write(t, 3)
    mdt = MetadataTable(t.table())
    [fs] = mdt.file_slices(K.FILES)
    op = CompactionOperation(base_instant_time=fs.base_instant, file_id=fs.file_id, partition_path=K.FILES,
                             data_file_path=fs.base_file.file_name if fs.base_file else None,
                             delta_file_paths=[lf.file_name for lf in fs.log_files])
    if hostile == "partition":
        op.partition_path, op.file_id = ".hoodie", "hoodie.properties"
    elif hostile == "file group":
        op.file_id = "../../evil"
    elif hostile == "base file":
        op.data_file_path = "../.hoodie/hoodie.properties"
    else:
        op.delta_file_paths = [".other-0000-0_20260101000000000.log.1_0-0-0"]
    mdt.table.timeline.create_requested(Action.COMPACTION, serialize_compaction_plan(CompactionPlan(operations=[op])))
    before = _table_files(t.path)
    with pytest.raises(HudiError, match="names .*nothing was written"):
        t.write([rec(1, 99)])
    after = _table_files(t.path)
    assert {k: v for k, v in after.items() if k in before} == before   # nothing changed or deleted
    assert not [k for k in after if k not in before and k.endswith(".hfile")]   # no base file written


@pytest.mark.parametrize("hostile", ["the mdt's properties", "a data file", "outside the table"])
def test_a_pending_clean_plan_naming_what_is_not_the_mdts_is_refused_before_anything_is_deleted(tmp_path, hostile):
    from tms.hudi.errors import HudiError
    from tms.hudi.timeline.serde import CleanerPlan, CleanFileInfo, serialize_cleaner_plan
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8, partitions=[K.FILES])
    _write(t, 3)
    mdt = MetadataTable(t.table())
    data_file = next(p for p in t.path.rglob("*.parquet") if ".hoodie" not in str(p))
    target = {"the mdt's properties": (".hoodie", str(t.path / ".hoodie/metadata/.hoodie/hoodie.properties")),
              "a data file": (K.FILES, str(data_file)),
              "outside the table": (K.FILES, str(tmp_path / "elsewhere.parquet"))}[hostile]
    (tmp_path / "elsewhere.parquet").write_bytes(b"PAR1")
    plan = CleanerPlan(policy="KEEP_LATEST_COMMITS",
                       file_paths_to_be_deleted_per_partition={target[0]: [CleanFileInfo(file_path=target[1])]})
    mdt.table.timeline.create_requested(Action.CLEAN, serialize_cleaner_plan(plan))
    before = _table_files(t.path)
    with pytest.raises(HudiError, match="not a file of the metadata table's partitions|outside"):
        t.write([rec(1, 99)])
    assert (tmp_path / "elsewhere.parquet").exists() and data_file.exists()
    assert all(k in _table_files(t.path) for k in before)   # nothing deleted
