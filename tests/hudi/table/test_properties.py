"""hoodie.properties: Java properties syntax and the table configuration."""
import pytest
from support import FIXTURE_TABLES

from tms.hudi.errors import HudiError, TableNotFoundError, UnsupportedTableError
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import (
    MergeMode,
    TableConfig,
    TableType,
    format_properties,
    new_table_properties,
    parse_properties,
    table_checksum,
)

EXPECTED = {  # fixture -> (type, version, key, ordering, partition, merge mode)
    "cow_v6_nonpartitioned": ("COPY_ON_WRITE", 6, ["id"], ["longField"], [], "COMMIT_TIME_ORDERING"),
    "cow_v6_simplekeygen_nonhivestyle_overwritetable": ("COPY_ON_WRITE", 6, ["id"], ["longField"], ["byteField"],
                                                        "COMMIT_TIME_ORDERING"),
    "cow_v8_nonpartitioned": ("COPY_ON_WRITE", 8, ["id"], ["longField"], [], "EVENT_TIME_ORDERING"),
    "mor_v6_nonpartitioned_rollback": ("MERGE_ON_READ", 6, ["id"], ["longField"], [], "COMMIT_TIME_ORDERING"),
    "mor_v6_trips_8i1u": ("MERGE_ON_READ", 6, ["uuid"], ["ts"], ["city"], "COMMIT_TIME_ORDERING"),
    "mor_v8_trips_8i3u1d": ("MERGE_ON_READ", 8, ["uuid"], ["ts"], ["city"], "EVENT_TIME_ORDERING"),
    "cow_v9_txns_simple_meta": ("COPY_ON_WRITE", 9, ["txn_id"], ["txn_ts"], ["region"], "EVENT_TIME_ORDERING"),
    "mor_v9_txns_simple_meta": ("MERGE_ON_READ", 9, ["txn_id"], ["txn_ts"], ["region"], "EVENT_TIME_ORDERING"),
    "mor_v9_txns_simple_nometa": ("MERGE_ON_READ", 9, ["txn_id"], ["txn_ts"], ["region"], "EVENT_TIME_ORDERING"),
    "cow_v6_timebasedkeygen_nonhivestyle": ("COPY_ON_WRITE", 6, ["id"], ["longField"], ["ts_str"],
                                            "COMMIT_TIME_ORDERING"),
    "cow_v9_lance_nonpartitioned": ("COPY_ON_WRITE", 9, ["id"], ["updated_at"], [], "EVENT_TIME_ORDERING"),
    "cow_v6_simplekeygen_hivestyle_no_metafields": ("COPY_ON_WRITE", 6, ["id"], ["longField"], ["byteField"],
                                                    "COMMIT_TIME_ORDERING"),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_TABLES))
def test_fixture_configs(fixture_tables, name):
    cfg = HudiTable.load(str(fixture_tables[name])).config
    ttype, version, key, ordering, partition, mode = EXPECTED[name]
    assert (cfg.table_type.value, cfg.version, cfg.record_key_fields, cfg.ordering_fields,
            cfg.partition_fields, cfg.merge_mode.value) == (ttype, version, key, ordering, partition, mode)
    assert int(cfg.props["hoodie.table.checksum"]) == table_checksum(cfg.database, cfg.name)
    # written back and parsed again, every property survives (schemas hold escaped ':' and '=')
    assert parse_properties(format_properties(cfg.props)) == cfg.props


def test_java_properties_syntax():
    text = "# comment\n! also\nkey1=value1\nkey2 : with\\:colon\nkey\\ 3 = spaced\nlong=first\\\n    second\n" \
           "uni=\\u00e9t\\u00e9\nempty=\n"
    assert parse_properties(text) == {"key1": "value1", "key2": "with:colon", "key 3": "spaced",
                                      "long": "firstsecond", "uni": "été", "empty": ""}


@pytest.mark.parametrize("version,ttype", [(6, "MERGE_ON_READ"), (8, "COPY_ON_WRITE")])
def test_new_table_properties_are_valid(version, ttype):
    props = new_table_properties(name="t", table_type=ttype, version=version, record_key=["id"], ordering=["ts"],
                                 partition=["city"], schema_json="{}")
    cfg = TableConfig(props)
    cfg.validate()
    assert cfg.table_type is TableType(ttype) and cfg.version == version
    assert cfg.merge_mode is MergeMode.EVENT_TIME_ORDERING
    assert props["hoodie.timeline.layout.version"] == ("1" if version == 6 else "2")


@pytest.mark.parametrize("change,error,message", [
    ({"hoodie.table.version": "5"}, UnsupportedTableError, "version 5 is not supported"),
    ({"hoodie.table.type": "BOGUS"}, HudiError, "unknown hoodie.table.type"),
    ({"hoodie.table.name": ""}, HudiError, "hoodie.table.name"),
])
def test_bad_configs_are_refused(change, error, message):
    props = new_table_properties(name="t", table_type="MERGE_ON_READ", version=8, record_key=["id"], ordering=[],
                                 partition=[], schema_json=None)
    with pytest.raises(error, match=message):
        TableConfig({**props, **change}).validate()


def test_custom_merge_mode_is_refused_with_a_clear_error(fixture_tables, tmp_path):
    import shutil
    path = tmp_path / "custom"
    shutil.copytree(fixture_tables["mor_v8_trips_8i3u1d"], path)
    props_file = path / ".hoodie" / "hoodie.properties"
    props_file.write_text(props_file.read_text().replace("hoodie.record.merge.mode=EVENT_TIME_ORDERING",
                                                         "hoodie.record.merge.mode=CUSTOM"))
    table = HudiTable.load(str(path))
    assert table.config.merge_mode is MergeMode.CUSTOM
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):
        read_snapshot(table)


def test_missing_table(tmp_path):
    with pytest.raises(TableNotFoundError, match="no Hudi table"):
        HudiTable.load(str(tmp_path))
