"""Table version 8 and later name a log file by its delta commit and place it in the file slice its completion
time falls into, as Java's file-system view does. The slice a log file opens depends on the slices before it, so
the view takes log files in the order of their names, whatever order a listing gives (a directory lists in any
order): a log-only file group listed newest first was once cut into one slice per log file, and the metadata
table's reader then lost every record-index entry of all but the newest log file."""
import shutil

from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable


def _slices(mdt: MetadataTable) -> dict[tuple[str, str], list[tuple[str, bool, list[str]]]]:
    return {(g.partition, g.file_id): [(fs.base_instant, fs.base_file is not None,
                                        [lf.name.instant for lf in fs.log_files]) for fs in g.slices]
            for g in mdt.view.file_groups()}


def test_log_files_take_the_same_slices_in_any_listing_order(tmp_path, fixture_tables, monkeypatch):
    path = shutil.copytree(fixture_tables["mor_v8_trips_8i3u1d"], tmp_path / "t")
    in_order = MetadataTable(HudiTable.load(str(path)))
    expected = _slices(in_order)
    # Record index file group 3: the metadata table's initialisation log and two writes' in one slice, then the
    # compaction's base file.
    assert [s[:2] for s in expected[("record_index", "record-index-0003-0")]] == [
        ("00000000000000002", False), ("20251220210130942", True)]
    assert expected[("record_index", "record-index-0003-0")][0][2] == [
        "00000000000000002", "20251220210108078", "20251220210128625"]

    reversed_listing = MetadataTable(HudiTable.load(str(path)))
    storage = reversed_listing.table.storage
    listdir = storage.listdir
    monkeypatch.setattr(storage, "listdir", lambda *a, **kw: list(reversed(listdir(*a, **kw))))
    assert _slices(reversed_listing) == expected
    assert reversed_listing.records("record_index") == in_order.records("record_index")
