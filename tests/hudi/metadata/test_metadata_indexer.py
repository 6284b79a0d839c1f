"""Building a metadata-table partition of an existing table through Hudi's `indexing` action while a writer
commits throughout: afterwards `tms verify` agrees (record index, column stats, bloom filters against the
data), hudi-rs reads the model's rows, the timeline holds the requested/inflight/completed `indexing` instant
in Hudi 1.x's layout, and hoodie.properties lists the partition; dropping one; what is refused."""
import threading
import time

import pytest
from concurrency_support import Party, fs_lock_options
from mdt_model import MdtModelledTable, check_metadata_table
from table_model import rec

from tms.hudi.errors import HudiError, UnsupportedTableError
from tms.hudi.metadata import indexer as indexer_module
from tms.hudi.metadata import keys as K
from tms.hudi.metadata.indexer import build_index, drop_index, run_index, schedule_index
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.serde import parse_index_commit_metadata, parse_index_plan


def _partitions(path):
    table = HudiTable.load(str(path))
    return (table.config.get("hoodie.table.metadata.partitions"),
            table.config.get("hoodie.table.metadata.partitions.inflight"))


def _timeline_files(path, instant):
    return sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir() if p.name.startswith(instant))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_indexes_built_on_a_live_table_agree_with_the_data(tmp_path, table_type):
    path = tmp_path / "t"
    t = MdtModelledTable(path, table_type, 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(40)], "insert")
    options = fs_lock_options(tmp_path)
    writer = Party(path, options)
    indexer = Party(path, options)
    stop, errors, written, written_at = threading.Event(), [], [], []

    def write_throughout():
        n = 0
        try:
            while not stop.is_set() or n < 3:
                batch = [rec(i, 10 + n) for i in range(n * 7 % 40, n * 7 % 40 + 6)] + [rec(100 + n, 1)]
                written_at.append(writer.writer.write(batch).instant)
                t.model.upsert(batch)
                if n % 3 == 2:
                    gone = [rec(100 + n - 1, 1)]
                    writer.writer.write(gone, "delete")
                    t.model.delete(gone)
                written.append(n)
                n += 1
        except Exception as e:   # reported by the test's thread
            errors.append(e)

    def build_while_writing(partition):
        # Each build starts once a write has begun after its plan: the build catches up with it.
        instant = schedule_index(indexer.table, partition, indexer.transactions)
        deadline = time.monotonic() + 60
        while not any(w > instant for w in written_at) and not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        return run_index(indexer.table, instant, indexer.transactions)

    thread = threading.Thread(target=write_throughout)
    thread.start()
    try:
        results = [build_while_writing(p) for p in (K.RECORD_INDEX, K.COLUMN_STATS, K.BLOOM_FILTERS, K.PARTITION_STATS)]
    finally:
        stop.set()
        thread.join()
        writer.close()
        indexer.close()
    assert not errors, errors
    assert len(written) >= 3
    # The writer committed while the partitions were being built, and after: both count.
    assert _partitions(path) == ("bloom_filters,column_stats,files,partition_stats,record_index", "")
    check_metadata_table(path, t.model.expected())   # tms verify is clean; hudi-rs reads the model's rows
    table = HudiTable.load(str(path))
    assert sorted(MetadataTable(table).records(K.RECORD_INDEX)) == sorted(str(r["id"]) for r in t.model.expected())
    overlapped = []
    for result in results:
        files = _timeline_files(path, result.instant)
        assert files[0] == f"{result.instant}.indexing.inflight" and files[1] == f"{result.instant}.indexing.requested"
        assert len(files) == 3 and files[2].endswith(".indexing") and files[2].startswith(result.instant + "_")
        completed_at = files[2].split("_")[1].split(".")[0]
        overlapped += [w for w in written_at if result.instant < w < completed_at]
        plan = parse_index_plan((path / ".hoodie" / "timeline" / files[1]).read_bytes())
        assert [i.metadata_partition_path for i in plan.index_partition_infos] == [result.partition]
        done = parse_index_commit_metadata((path / ".hoodie" / "timeline" / files[2]).read_bytes())
        assert [i.metadata_partition_path for i in done.index_partition_infos] == [result.partition]
        # The MDT delta commit initialising the partition has the indexing instant's time.
        mdt_timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
        assert any(p.name.startswith(result.instant + "_") and p.name.endswith(".deltacommit")
                   for p in mdt_timeline.iterdir())
    assert overlapped, "no write committed while an index was being built"


def test_writes_committed_between_schedule_and_run_are_caught_up(tmp_path):
    path = tmp_path / "t"
    t = MdtModelledTable(path, "MERGE_ON_READ", 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(10)], "insert")
    table = HudiTable.load(str(path))
    instant = schedule_index(table, K.RECORD_INDEX)
    assert _partitions(path) == ("files", "record_index")
    t.write([rec(i, 2) for i in range(5, 15)])           # commits while the partition is inflight
    t.write([rec(3, 5)], "delete")
    result = run_index(HudiTable.load(str(path)), instant)
    assert result.partition == K.RECORD_INDEX and result.records == len(t.model.expected()) == 14
    t.write([rec(20, 1)])
    check_metadata_table(path, t.model.expected())
    assert sorted(MetadataTable(HudiTable.load(str(path))).records(K.RECORD_INDEX)) == \
        sorted(str(r["id"]) for r in t.model.expected())


def test_drop_removes_the_partition_and_writers_go_on(tmp_path):
    path = tmp_path / "t"
    t = MdtModelledTable(path, "COPY_ON_WRITE", 8, partitions=["files", "column_stats"])
    t.write([rec(i, 1) for i in range(10)], "insert")
    with pytest.raises(HudiError, match="drop column_stats first"):
        drop_index(HudiTable.load(str(path)), K.FILES)
    drop_index(HudiTable.load(str(path)), K.COLUMN_STATS)
    assert _partitions(path) == ("files", "")
    assert not (path / ".hoodie" / "metadata" / "column_stats").exists()
    t.write([rec(i, 2) for i in range(5)])
    check_metadata_table(path, t.model.expected())
    drop_index(HudiTable.load(str(path)), K.FILES)
    assert not (path / ".hoodie" / "metadata").exists() and _partitions(path) == ("", "")
    # The files partition is built again for the existing table, the metadata table with it.
    build_index(HudiTable.load(str(path)), K.FILES)
    t.write([rec(i, 3) for i in range(3)])
    check_metadata_table(path, t.model.expected())


@pytest.mark.parametrize("version, partition, message", [
    (6, K.RECORD_INDEX, "table version 6: TMS builds metadata partitions of Hudi 1.x tables"),
    (8, "secondary_index_city", "secondary_index_city needs the column it indexes"),
    (8, "expr_index_x", "TMS does not build expression indexes"),
    (8, K.PARTITION_STATS, "partition_stats needs column_stats built first"),
    (8, "nonsense", "TMS cannot build metadata partition 'nonsense'"),
])
def test_what_cannot_be_built_is_refused_before_anything_is_written(tmp_path, version, partition, message):
    path = tmp_path / "t"
    t = MdtModelledTable(path, "MERGE_ON_READ", version, partitions=["files"])
    t.write([rec(i, 1) for i in range(3)], "insert")
    timeline = path / ".hoodie" / ("timeline" if version >= 8 else "")
    before = sorted(p.name for p in timeline.iterdir())
    with pytest.raises(UnsupportedTableError, match=message):
        schedule_index(HudiTable.load(str(path)), partition)
    assert sorted(p.name for p in timeline.iterdir()) == before
    assert _partitions(path) == ("files", "" if version >= 8 else None)


@pytest.mark.parametrize("partition", [K.RECORD_INDEX, K.COLUMN_STATS, K.BLOOM_FILTERS])
def test_the_catch_up_takes_in_what_completed_during_the_first_build(tmp_path, monkeypatch, partition):
    """Writes (new file groups, updates into log files, a delete) completing after the first build read the table
    are taken in under the lock: the instants are reported caught up, and the partition agrees with the data."""
    path = tmp_path / "t"
    t = MdtModelledTable(path, "MERGE_ON_READ", 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(12)], "insert")
    first_build = indexer_module._Build.records
    during: list[str] = []

    def records_then_writes(self, state, previous):
        out = first_build(self, state, previous)
        if not during:   # the first build only: then writers commit
            during.append(t.write([rec(i, 2) for i in range(8, 16)]))
            during.append(t.write([rec(2, 3)], "delete"))
        return out

    monkeypatch.setattr(indexer_module._Build, "records", records_then_writes)
    result = build_index(HudiTable.load(str(path)), partition)
    assert result.caught_up == during
    check_metadata_table(path, t.model.expected())
    if partition == K.RECORD_INDEX:
        assert sorted(MetadataTable(HudiTable.load(str(path))).records(K.RECORD_INDEX)) == \
            sorted(str(r["id"]) for r in t.model.expected())


def test_a_crashed_run_is_run_again_to_completion(tmp_path, monkeypatch):
    """A run that crashed after writing the partition's file groups (the instant left inflight) is run again:
    what it left is discarded and the partition built anew."""
    path = tmp_path / "t"
    t = MdtModelledTable(path, "COPY_ON_WRITE", 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(10)], "insert")
    instant = schedule_index(HudiTable.load(str(path)), K.RECORD_INDEX)

    def crash(*_args, **_kwargs):
        raise RuntimeError("crashed")

    monkeypatch.setattr(indexer_module, "_save_partitions", crash)
    with pytest.raises(RuntimeError, match="crashed"):
        run_index(HudiTable.load(str(path)), instant)
    monkeypatch.undo()
    assert _timeline_files(path, instant) == [f"{instant}.indexing.inflight", f"{instant}.indexing.requested"]
    t.write([rec(i, 2) for i in range(5, 12)])   # the writer updates the partition whose file groups exist
    run_index(HudiTable.load(str(path)), instant)
    assert _partitions(path) == ("files,record_index", "")
    check_metadata_table(path, t.model.expected())
