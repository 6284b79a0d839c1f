"""Timeline: instant names of v6 and v8, ordering, incremental reload, safe transitions."""
import pytest

from tms.hudi.errors import InstantConflictError
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import new_table_properties
from tms.hudi.timeline import timeline as timeline_module
from tms.hudi.timeline.instant import Instant, State, instant_file_name, parse_instant_file_name


@pytest.mark.parametrize("name,expected,version", [
    ("20240101000000000.commit.requested", Instant("20240101000000000", State.REQUESTED, "commit"), 6),
    ("20240101000000000.inflight", Instant("20240101000000000", State.INFLIGHT, "commit"), 6),
    ("20240101000000000.commit", Instant("20240101000000000", State.COMPLETED, "commit"), 6),
    ("20240101000000000.deltacommit.inflight", Instant("20240101000000000", State.INFLIGHT, "deltacommit"), 6),
    ("20240101000000000.compaction.requested", Instant("20240101000000000", State.REQUESTED, "compaction"), 6),
    ("20240101000000000.replacecommit.requested",
     Instant("20240101000000000", State.REQUESTED, "replacecommit"), 6),
    ("20240101000000000.clustering.inflight", Instant("20240101000000000", State.INFLIGHT, "clustering"), 8),
    ("20240101000000000_20240101000001000.deltacommit",
     Instant("20240101000000000", State.COMPLETED, "deltacommit", "20240101000001000"), 8),
    ("20240101000000000.rollback.requested", Instant("20240101000000000", State.REQUESTED, "rollback"), 8),
    ("20240101000000000_20240101000001000.clean",
     Instant("20240101000000000", State.COMPLETED, "clean", "20240101000001000"), 8),
    # A v6 metadata table's own operations: the data instant + HoodieTableMetadataUtil's suffix.
    ("20240101000000000001.commit", Instant("20240101000000000001", State.COMPLETED, "commit"), 6),
    ("20240101000000000006.rollback.inflight", Instant("20240101000000000006", State.INFLIGHT, "rollback"), 6),
])
def test_instant_file_names_round_trip(name, expected, version):
    parsed = parse_instant_file_name(name)
    assert parsed == expected and parsed.completion_time == expected.completion_time
    assert instant_file_name(parsed, version) == name


@pytest.mark.parametrize("name", ["hoodie.properties", ".aux", "20240101.commit", "x.commit",
                                  "20240101000000000.commit.crc", "20240101000000000.bogus",
                                  "2024010100000000000.commit", "202401010000000000010.commit"])
def test_other_files_are_not_instants(name):
    assert parse_instant_file_name(name) is None


def test_clustering_is_a_replacecommit_on_v6():
    inst = Instant("20240101000000000", State.REQUESTED, "clustering")
    assert instant_file_name(inst, 6) == "20240101000000000.replacecommit.requested"
    assert instant_file_name(inst, 8) == "20240101000000000.clustering.requested"
    done = inst.with_state(State.COMPLETED, "20240101000000999")
    assert instant_file_name(done, 8) == "20240101000000000_20240101000000999.replacecommit"


def test_ordering_is_by_instant_time_then_state():
    a = Instant("20240101000000002", State.REQUESTED, "commit")
    b = Instant("20240101000000001", State.COMPLETED, "commit")
    c = Instant("20240101000000001", State.INFLIGHT, "commit")
    assert sorted([a, b, c]) == [c, b, a]


def _table(tmp_path, version):
    props = new_table_properties(name="t", table_type="MERGE_ON_READ", version=version, record_key=["id"],
                                 ordering=[], partition=[], schema_json=None)
    return HudiTable.create(str(tmp_path / "t"), props)


@pytest.mark.parametrize("version", [6, 8])
def test_transitions_never_overwrite_a_completed_instant(tmp_path, version):
    table = _table(tmp_path, version)
    tl = table.timeline
    req = tl.create_requested("deltacommit")
    with pytest.raises(InstantConflictError):
        tl.create_requested("deltacommit", timestamp=req.timestamp)
    with pytest.raises(InstantConflictError, match="not inflight"):
        tl.complete(req, b"{}")
    inflight = tl.transition_to_inflight(req)
    with pytest.raises(InstantConflictError):
        tl.transition_to_inflight(req)
    done = tl.complete(inflight, b"{}")
    assert done.is_completed and (done.completion_time is not None) == (version >= 8)
    path = table.storage.full(tl.path_of(done))
    before = open(path, "rb").read()
    with pytest.raises(InstantConflictError, match="already completed"):
        tl.complete(inflight, b"overwritten")
    with pytest.raises(InstantConflictError):
        tl.rewrite_requested(req, b"overwritten")
    with pytest.raises(InstantConflictError):
        tl.delete_pending(req.timestamp)
    assert open(path, "rb").read() == before
    # a second process sees the same, after its own reload
    other = HudiTable.load(table.base_path).timeline
    with pytest.raises(InstantConflictError):
        other.complete(inflight, b"again")


def test_no_half_written_instant_is_ever_visible(tmp_path, monkeypatch):
    import os

    from tms.hudi.storage.table_storage import TEMP_PREFIX
    table = _table(tmp_path, 8)
    tl = table.timeline
    req = tl.create_requested("compaction", b"plan")
    folder = tmp_path / "t" / ".hoodie" / "timeline"
    # a process killed while writing leaves only a temp file, which no listing shows
    (folder / f"{TEMP_PREFIX}killed").write_bytes(b"half")
    # a failure between writing the bytes and publishing the name leaves nothing
    monkeypatch.setattr(os, "link", lambda *a: (_ for _ in ()).throw(OSError("EIO")))
    with pytest.raises(OSError):
        tl.transition_to_inflight(req, b"x")
    monkeypatch.undo()
    fresh = HudiTable.load(table.base_path).timeline
    assert [i.state for i in fresh.all_files()] == [State.REQUESTED]
    assert sorted(p.name for p in folder.iterdir()) == sorted([req.file_name(8), f"{TEMP_PREFIX}killed"])


def test_reload_parses_only_new_names(tmp_path, monkeypatch):
    table = _table(tmp_path, 8)
    writer_tl = table.timeline
    for _ in range(50):
        writer_tl.complete(writer_tl.transition_to_inflight(writer_tl.create_requested("deltacommit")), b"")
    reader = HudiTable.load(table.base_path).timeline
    assert len(reader) == 50
    parsed = []
    real = timeline_module.parse_instant_file_name
    monkeypatch.setattr(timeline_module, "parse_instant_file_name", lambda n: parsed.append(n) or real(n))
    assert reader.reload() == []
    assert parsed == []
    new = writer_tl.create_requested("deltacommit")
    assert reader.reload() == [new]
    assert parsed == [new.file_name(8)]
    writer_tl.delete_pending(new.timestamp)
    reader.reload()
    assert reader.get(new.timestamp) is None and len(reader) == 50


def test_new_instant_times_increase_past_completion_times(tmp_path):
    table = _table(tmp_path, 8)
    tl = table.timeline
    seen = []
    for _ in range(20):
        done = tl.complete(tl.transition_to_inflight(tl.create_requested("deltacommit")), b"")
        seen += [done.timestamp, done.completion_time]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_v6_metadata_table_base_files_of_its_compactions_are_base_files():
    """Java names an MDT compaction `<latest delta commit>001`, and its HFile base files after it."""
    name = BaseFileName.parse("files-0000-0_0-11-21_20240101000000000001.hfile")
    assert name is not None and name.instant == "20240101000000000001" and name.file_id == "files-0000-0"
