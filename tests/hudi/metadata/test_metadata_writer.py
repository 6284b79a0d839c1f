"""The writer keeps a metadata table (MDT) in sync as Java does, and `tms verify` reports every difference:
tables created with `tms write --create --metadata` (versions 6, 8, 9) read in hudi-rs as the model says, with
and without their MDT; each data instant has its MDT delta commit, completed first, whose log files hold HFile
data blocks with sorted keys; random writes and table services keep `tms verify` clean."""
import json
import os
import time
from datetime import UTC
from zoneinfo import ZoneInfo

import pytest
from mdt_model import MdtModelledTable, check_metadata_table
from table_model import key, rec
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.context import HudiContext
from tms.hudi.fs_view.file_names import LogFileName
from tms.hudi.log_format.hfile import read_hfile
from tms.hudi.log_format.log_file import BlockType, HeaderKey, read_log_file
from tms.hudi.metadata import keys as K
from tms.hudi.metadata.init import init_instant
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.metadata.records import decode_value
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State, millis_from_instant

US_CENTRAL = ZoneInfo("America/Chicago")
cli = CliRunner()


def tms(*args):
    r = cli.invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_cli_creates_tables_with_a_metadata_table_and_verify_is_clean(tmp_path, version, table_type):
    path = tmp_path / "t"
    first = _jsonl(tmp_path / "a.jsonl", [{"id": i, "ts": 1, "city": ["a", "b"][i % 2]} for i in range(6)])
    code, _, err = tms("write", path, "--records", first, "--create", "--table-type", table_type,
                       "--table-version", version, "--key", "id", "--ordering", "ts", "--partition", "city",
                       "--metadata", "files,column_stats,record_index")
    assert code == 0, err
    table = HudiTable.load(str(path))
    assert table.config.get("hoodie.table.metadata.partitions") == "column_stats,files,record_index"
    assert HudiTable.load(str(path / ".hoodie" / "metadata")).config.version == version
    more = _jsonl(tmp_path / "b.jsonl", [{"id": i, "ts": 2, "city": ["a", "b"][i % 2]} for i in range(3, 9)])
    assert tms("write", path, "--records", more)[0] == 0
    gone = _jsonl(tmp_path / "c.jsonl", [{"id": 0, "city": "a"}])
    assert tms("write", path, "--records", gone, "--op", "delete")[0] == 0
    code, out, _ = tms("verify", path)
    assert code == 0 and "ok" in out
    check_metadata_table(path)
    assert sorted(MetadataTable(HudiTable.load(str(path))).records("record_index")) == [str(i) for i in range(1, 9)]


def test_metadata_option_needs_create(tmp_path):
    recs = _jsonl(tmp_path / "a.jsonl", [{"id": 1, "ts": 1, "city": "a"}])
    code, _, err = tms("write", tmp_path / "t", "--records", recs, "--metadata", "files")
    assert code == 1 and "--create" in err


def test_verify_reports_each_kind_of_difference(tmp_path):
    t = MdtModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    t.write([rec(i, 10) for i in range(12)], "insert")
    t.write([rec(i, 20) for i in range(4)])
    assert tms("verify", t.path)[0] == 0
    # A file the MDT lists goes missing; a leftover of a failed write appears; a write crashes.
    versions = sorted(t.path.glob("city=nyc/*.parquet"), key=lambda f: f.name.rsplit("_", 1)[-1])
    for f in versions:   # the file group's every version: its records are gone
        f.unlink()
    listed = versions[-1]
    # a failed write's instant time among the timeline's (an older one would be an archived commit's file)
    failed = str(int(t.table().timeline.completed()[0].timestamp) + 1)
    orphan = t.path / "city=sf" / f"00000000-0000-0000-0000-000000000000-0_0-0-0_{failed}.parquet"
    orphan.write_bytes(b"x")
    crashed = t.write([rec(30, 5)], leave_inflight=True)
    old = time.time() - 3600
    os.utime(t.path / ".hoodie" / ".heartbeat" / crashed, (old, old))
    code, out, _ = tms("verify", t.path, "--json")
    assert code == 1
    problems = json.loads(out)["problems"]
    checks = {(p["check"], p["where"]) for p in problems}
    assert ("mdt_listing", f"city=nyc/{listed.name}") in checks
    assert ("unreferenced_file", f"city=sf/{orphan.name}") in checks
    assert ("heartbeat", crashed) in checks
    assert any(c == "record_index" for c, _ in checks)      # the records of the lost file
    code, out, _ = tms("verify", t.path)
    assert code == 1 and out.strip().endswith("problem(s)")


@pytest.mark.parametrize("version", [6, 8, 9])
def test_each_data_instant_has_its_mdt_delta_commit_of_sorted_hfile_blocks(tmp_path, version):
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", version)
    instants = [t.write([rec(i, 10) for i in range(20)], "insert"), t.write([rec(i, 20) for i in range(5)]),
                t.write([key(1)], "delete")]
    table = t.table()
    mdt = MetadataTable(table)
    mtl = mdt.table.timeline
    blocks = 0
    for ts in instants:
        done = mtl.states_of(ts)[State.COMPLETED]
        data_done = table.timeline.states_of(ts)[State.COMPLETED]
        if version >= 8:
            assert done.completion_time <= data_done.completion_time
        for stat in mtl.commit_metadata(done).write_stats():
            name = LogFileName.parse(stat.path)
            assert name is not None and name.instant == (ts if version >= 8 else init_instant(6))
            for block in read_log_file(mdt.table.storage.read_bytes(stat.path)):
                assert block.instant_time == ts
                if block.block_type is BlockType.HFILE_DATA:
                    h = read_hfile(block.content())
                    assert h.keys() == sorted(h.keys()) and h.keys()
                    schema = block.header[HeaderKey.SCHEMA]
                    for k, v in h.items():
                        assert decode_value(v, k, schema).key == k
                    blocks += 1
    assert blocks >= 6
    t.check()


def test_writer_refuses_tables_whose_indexes_it_would_leave_stale(tmp_path):
    from tms.hudi.errors import UnsupportedTableError
    from tms.hudi.table.properties import format_properties
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8)
    t.write([rec(i, 10) for i in range(4)], "insert")
    props = t.table().config.props
    props["hoodie.table.metadata.partitions"] += ",secondary_index_name_idx"
    (t.path / ".hoodie" / "hoodie.properties").write_text(format_properties(props))
    before = sorted(p.name for p in (t.path / ".hoodie" / "timeline").iterdir())
    from tms.hudi.table.writer import HudiWriter
    with pytest.raises(UnsupportedTableError, match="secondary_index_name_idx"):
        HudiWriter(t.table()).write([rec(1, 20)])
    assert sorted(p.name for p in (t.path / ".hoodie" / "timeline").iterdir()) == before


@pytest.fixture
def us_central():
    """The zone of LOCAL timelines passed in: that of the JVM that wrote the v9 fixtures (US Central)."""
    return HudiContext(local_zone=US_CENTRAL)


def test_java_writes_record_index_times_in_its_jvms_zone(fixture_tables, us_central):
    """The fixture's record index times are its instants read as US Central wall-clock times, not UTC ones."""
    table = HudiTable.load(str(fixture_tables["cow_v9_txns_simple_meta"]), context=us_central)
    index = MetadataTable(table).records(K.RECORD_INDEX)
    local = {millis_from_instant(i.timestamp, US_CENTRAL) for i in table.timeline}
    utc = {millis_from_instant(i.timestamp, UTC) for i in table.timeline}
    assert index and all(r.location.instant_millis in local - utc for r in index.values())


@pytest.mark.parametrize("timeline_zone,utc", [(None, False), ("LOCAL", False), ("UTC", True)])
def test_record_index_times_are_parsed_in_the_timeline_zone(tmp_path, us_central, timeline_zone, utc):
    """As Java's createRecordIndexUpdate: in hoodie.table.timeline.timezone, LOCAL (the default) being the
    zone of the process that writes (TMS's, as the JVM's for a Java writer on the same host)."""
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 9, context=us_central)
    if timeline_zone is not None:
        props = t.path / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text() + f"hoodie.table.timeline.timezone={timeline_zone}\n")
        t.writer.table = t.table()
    ts = t.write([rec(i, 10) for i in range(5)], "insert")
    index = MetadataTable(t.table()).records(K.RECORD_INDEX)
    assert millis_from_instant(ts, UTC) != millis_from_instant(ts, US_CENTRAL)
    zone = UTC if utc else US_CENTRAL
    assert {r.location.instant_millis for r in index.values()} == {millis_from_instant(ts, zone)}
    t.check()


def test_merged_column_stats_take_the_type_of_the_side_with_values():
    """Java Hudi 1.1 types the stats of a column without values (a log file of deletes) NULL; merged with a
    file's String bounds, the result is typed String (a NULL type over String bounds fails Java's reader:
    "should be Void, but got String")."""
    from tms.hudi.metadata.records import merge_column_stats

    string = {"typeOrdinal": 7, "additionalInfo": None}
    null = {"typeOrdinal": 1, "additionalInfo": None}
    bounded = {"minValue": ("StringWrapper", {"value": "a"}), "maxValue": ("StringWrapper", {"value": "z"}),
               "valueCount": 3, "nullCount": 0, "valueType": string}
    empty = {"minValue": None, "maxValue": None, "valueCount": 2, "nullCount": 2, "valueType": null}
    for prev, new in ((bounded, empty), (empty, bounded)):
        merged = merge_column_stats(prev, new)
        assert merged["valueType"] == string and merged["valueCount"] == 5
    assert merge_column_stats(empty, empty)["valueType"] == null
