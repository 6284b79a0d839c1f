"""Building a secondary index (`secondary_index_<name>` on one column) of an existing table through Hudi's
`indexing` action while writes complete during the build: the index holds exactly the (secondary key, record
key) of every live record, keyed, routed to file groups and defined as Hudi builds it for the table's version
(8: Hudi 1.0, 9: Hudi 1.1), and `tms verify` agrees; a drop removes it with its definition; what TMS cannot build
exactly is refused before anything is written."""
import json

import pytest
from mdt_model import MdtModelledTable, check_metadata_table
from table_model import rec

from tms.hudi.errors import HudiError, UnsupportedTableError
from tms.hudi.metadata import indexer as indexer_module
from tms.hudi.metadata import keys as K
from tms.hudi.metadata.indexer import build_index, drop_index, schedule_index
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table import writer as writer_module
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.verify import verify_table

INDEX = "secondary_index_name_idx"


def _expected_keys(rows: list[dict], version: int) -> list[str]:
    """The keys Hudi writes: `<secondary key>$<record key>` with '\\' and '$' escaped; a null value is the NUL
    character in Hudi 1.1 (table version 9) and not indexed by Hudi 1.0 (version 8)."""
    out = []
    for r in rows:
        if r["name"] is None:
            if version == 9:
                out.append(f"\x00${r['id']}")
            continue
        out.append(r["name"].replace("\\", "\\\\").replace("$", "\\$") + f"${r['id']}")
    return sorted(out)


def _index_definitions(path) -> dict:
    return json.loads((path / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]


@pytest.mark.parametrize("version", [8, 9])
def test_a_secondary_index_built_while_writes_complete_agrees_with_the_data(tmp_path, monkeypatch, version):
    path = tmp_path / "t"
    t = MdtModelledTable(path, "MERGE_ON_READ", version, partitions=["files", "record_index"])
    t.write([rec(i, 1) for i in range(20)] + [rec(20, 1, "a$b\\c"), {**rec(21, 1), "name": None}], "insert")
    t.write([rec(i, 2, "shared") for i in range(0, 20, 4)])          # one secondary key, several records
    first_build = indexer_module._Build.records
    during: list[str] = []

    def records_then_writes(self, state, previous):
        out = first_build(self, state, previous)
        if not during:   # the first build only: then a writer commits, changing indexed values
            # TMS's writer refuses tables with a secondary index it cannot maintain; it stands here for a Java
            # writer, which commits while the partition has no file groups yet (the catch-up takes it in).
            with monkeypatch.context() as m:
                m.setattr(writer_module, "unmaintainable_partitions_for_writes", lambda _table: [])
                during.append(t.write([rec(i, 3, f"moved{i}") for i in range(10, 16)] + [rec(30, 3)]))
                during.append(t.write([rec(2, 4)], "delete"))
                during.append(t.write([{**rec(5, 4), "name": None}]))
        return out

    monkeypatch.setattr(indexer_module._Build, "records", records_then_writes)
    result = build_index(HudiTable.load(str(path)), INDEX, column="name")
    monkeypatch.undo()
    assert result.caught_up == during and result.partition == INDEX

    table = HudiTable.load(str(path))
    expected = _expected_keys(t.model.expected(), version)
    assert "a\\$b\\\\c$20" in expected and ("\x00$21" in expected) == (version == 9)
    assert sorted(MetadataTable(table).records(INDEX)) == expected
    assert result.records == len(expected)
    check_metadata_table(path, t.model.expected())   # tms verify: keys and their file groups; hudi-rs reads
    # Defined as CREATE INDEX defines it; listed as built; Hudi's default of 10 file groups for a small index.
    definition = {"indexName": INDEX, "indexType": "secondary_index", "indexFunction": "identity",
                  "sourceFields": ["name"], "indexOptions": {}} | ({"version": "V2"} if version == 9 else {})
    assert _index_definitions(path) == {INDEX: definition}
    assert table.config.get("hoodie.table.index.defs.path") == ".hoodie/.index_defs/index.json"
    assert table.config.get("hoodie.table.metadata.partitions") == f"files,record_index,{INDEX}"
    slices = MetadataTable(table).file_slices(INDEX)
    assert [fs.file_id for fs in slices] == [f"secondary-index-name-idx-{i:04d}-0" for i in range(10)]
    # Hudi 1.1 routes by the secondary key alone: the records of one value share a file group.
    groups = {K.file_group_index_of(fs.file_id) for fs in slices
              if any(k.startswith("shared$") for k in MetadataTable(table).slice_records(fs))}
    assert len(groups) == 1 if version == 9 else len(groups) > 1


def test_a_dropped_secondary_index_leaves_with_its_definition(tmp_path):
    path = tmp_path / "t"
    t = MdtModelledTable(path, "COPY_ON_WRITE", 9, partitions=["files", "record_index"])
    t.write([rec(i, 1) for i in range(8)], "insert")
    build_index(HudiTable.load(str(path)), INDEX, column="name")
    with pytest.raises(HudiError, match="already has metadata partition"):
        schedule_index(HudiTable.load(str(path)), INDEX, column="name")
    drop_index(HudiTable.load(str(path)), INDEX)
    assert _index_definitions(path) == {}
    assert not (path / ".hoodie" / "metadata" / INDEX).exists()
    t.write([rec(i, 2) for i in range(4)])          # the writer maintains the table again
    build_index(HudiTable.load(str(path)), "secondary_index_by_ts", column="ts")
    table = HudiTable.load(str(path))
    assert sorted(MetadataTable(table).records("secondary_index_by_ts")) == \
        sorted(f"{r['ts']}${r['id']}" for r in t.model.expected())
    assert verify_table(table) == []


@pytest.mark.parametrize("version, partitions, partition, column, message", [
    (6, ["files", "record_index"], INDEX, "name", "TMS builds secondary indexes of tables of version 8 and 9 only"),
    (8, ["files"], INDEX, "name", f"{INDEX} needs record_index built first"),
    (8, ["files", "record_index"], INDEX, None, "needs the column it indexes"),
    (8, ["files", "record_index"], INDEX, "nope", "has no data column 'nope'"),
    (8, ["files", "record_index"], INDEX, "_hoodie_record_key", "has no data column"),
    (8, ["files", "record_index"], "secondary_index_", "name", "is not a secondary index name"),
    (8, ["files"], K.COLUMN_STATS, "name", "a column is given for secondary indexes only"),
    (8, ["files"], "expr_index_x", None, "TMS does not build expression indexes"),
])
def test_what_cannot_be_built_exactly_is_refused_before_anything_is_written(tmp_path, version, partitions, partition,
                                                                             column, message):
    path = tmp_path / "t"
    t = MdtModelledTable(path, "MERGE_ON_READ", version, partitions=partitions)
    t.write([rec(i, 1) for i in range(3)], "insert")
    timeline = path / ".hoodie" / ("timeline" if version >= 8 else "")
    before = sorted(p.name for p in timeline.iterdir())
    with pytest.raises(UnsupportedTableError, match=message):
        schedule_index(HudiTable.load(str(path)), partition, column=column)
    assert sorted(p.name for p in timeline.iterdir()) == before
    assert not (path / ".hoodie" / ".index_defs").exists()


def test_a_definition_left_without_its_build_is_scheduled_again_or_dropped(tmp_path, monkeypatch):
    """A schedule that crashed after defining the index (no indexing instant yet): scheduling it on the same column
    goes on; on another column it is refused; a drop removes the leftover definition."""
    path = tmp_path / "t"
    t = MdtModelledTable(path, "MERGE_ON_READ", 8, partitions=["files", "record_index"])
    t.write([rec(i, 1) for i in range(6)], "insert")

    def crashed_schedule(partition):
        def crash(*_args, **_kwargs):
            raise RuntimeError("crashed")
        table = HudiTable.load(str(path))
        with monkeypatch.context() as m:
            m.setattr(type(table.timeline), "create_requested", crash)
            with pytest.raises(RuntimeError, match="crashed"):
                schedule_index(table, partition, column="name")

    crashed_schedule(INDEX)
    crashed_schedule("secondary_index_other")
    assert sorted(_index_definitions(path)) == [INDEX, "secondary_index_other"]
    with pytest.raises(HudiError, match="already defines index"):
        schedule_index(HudiTable.load(str(path)), INDEX, column="city")
    build_index(HudiTable.load(str(path)), INDEX, column="name")
    drop_index(HudiTable.load(str(path)), "secondary_index_other")
    assert sorted(_index_definitions(path)) == [INDEX]
    assert verify_table(HudiTable.load(str(path))) == []
