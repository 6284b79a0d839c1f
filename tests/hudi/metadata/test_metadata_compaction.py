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
