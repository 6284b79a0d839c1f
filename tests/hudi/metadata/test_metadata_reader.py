"""The metadata table of every fixture that has one reads as Hudi wrote it: its file listing equals the
files storage holds for completed instants, its record index locates every row hudi-rs reads, and every
record lies in the file group Hudi routes its key to."""
import pytest
from mdt_model import MDT_FIXTURES, unzip_mdt_fixture
from support import hudi_rs_table

from tms.hudi.metadata import keys as K
from tms.hudi.metadata.listing import committed_files, data_partitions
from tms.hudi.metadata.reader import MetadataTable, metadata_partitions
from tms.hudi.metadata.records import RecordType
from tms.hudi.table.hudi_table import HudiTable


@pytest.fixture(scope="module")
def mdt_roots(tmp_path_factory):
    root = tmp_path_factory.mktemp("mdt_fixtures")
    return {name: unzip_mdt_fixture(name, root) for name in MDT_FIXTURES}


@pytest.mark.parametrize("name", sorted(MDT_FIXTURES))
def test_file_listing_equals_storage_and_timeline(mdt_roots, name):
    table = HudiTable.load(str(mdt_roots[name]))
    mdt = MetadataTable(table)
    assert mdt.all_partitions() == data_partitions(table)
    listing = mdt.file_listing()
    assert listing == committed_files(table)
    assert sum(len(f) for f in listing.values()) > 0


@pytest.mark.parametrize("name", sorted(MDT_FIXTURES))
def test_partitions_on_disk_are_the_configured_ones(mdt_roots, name):
    table = HudiTable.load(str(mdt_roots[name]))
    assert MetadataTable(table).partitions == sorted(metadata_partitions(table))


@pytest.mark.parametrize("name", sorted(MDT_FIXTURES))
def test_record_index_locates_every_row_hudi_rs_reads(mdt_roots, name):
    path = mdt_roots[name]
    mdt = MetadataTable(HudiTable.load(str(path)))
    index = mdt.records(K.RECORD_INDEX)
    theirs = hudi_rs_table(path).select(["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"])
    rows = theirs.to_pylist()
    assert len(rows) > 0
    assert sorted(index) == sorted(r["_hoodie_record_key"] for r in rows)
    for r in rows:
        loc = index[r["_hoodie_record_key"]].location
        assert loc.partition == r["_hoodie_partition_path"]
        assert r["_hoodie_file_name"].lstrip(".").startswith(loc.file_id)


@pytest.mark.parametrize("name", sorted(MDT_FIXTURES))
def test_records_lie_in_the_file_group_their_key_routes_to(mdt_roots, name):
    mdt = MetadataTable(HudiTable.load(str(mdt_roots[name])))
    checked = secondary = 0
    for partition in mdt.partitions:
        # Hudi 1.1 (table version 9) routes a secondary-index key by its secondary-key prefix only.
        v2 = partition.startswith(K.SECONDARY_INDEX_PREFIX) and "v9" in name
        slices = mdt.file_slices(partition)
        for fs in slices:
            for key in mdt.slice_records(fs):
                route = K.secondary_file_group_index(key, len(slices), v2=True) if v2 else \
                    K.file_group_index(key, len(slices))
                assert route == K.file_group_index_of(fs.file_id), (partition, key)
                checked += 1
                secondary += partition.startswith(K.SECONDARY_INDEX_PREFIX)
    assert checked > 0
    assert secondary > 0 or "lance" in name or "mor_v9" in name


@pytest.mark.parametrize("name", sorted(n for n in MDT_FIXTURES if "lance" not in n))
def test_column_stats_keys_are_built_as_hudi_builds_them(mdt_roots, name):
    mdt = MetadataTable(HudiTable.load(str(mdt_roots[name])))
    stats = mdt.records(K.COLUMN_STATS)
    assert stats
    for key, rec in stats.items():
        assert rec.type == RecordType.COLUMN_STATS
        cs = rec.column_stats
        partitions = [p for p in mdt.all_partitions()
                      if key == K.column_stats_key(p, cs["fileName"], cs["columnName"])]
        assert len(partitions) == 1, key
    for key, rec in mdt.records(K.PARTITION_STATS).items():
        cs = rec.column_stats
        assert any(key == K.partition_stats_key(p, cs["columnName"]) for p in mdt.all_partitions()), key


def test_key_hashes_match_hudis_published_values():
    # Keys seen in Hudi-written metadata tables, and String.hashCode golden values.
    assert K.column_id("currency") == "/m6lxu4Dh5w="
    assert K.partition_id("region=us") == "431THTTwO5Q="
    assert K.java_string_hash("polygenelubricants") == -(1 << 31)
    assert K.file_group_index("polygenelubricants", 10) == 8
    assert K.file_group_index("__all_partitions__", 3) == 2
    assert K.file_group_index("city=chennai", 10) == 0
    assert K.file_group_index("\U0001F600", 10) == 9
    assert K.secondary_index_key(None, "r1") == "\x00$r1"
    assert K.secondary_index_key("a$b\\c", "k$") == "a\\$b\\\\c$k\\$"
    assert K.split_secondary_index_key("a\\$b\\\\c$k\\$") == ("a$b\\c", "k$")
