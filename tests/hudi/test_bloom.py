"""The record-key bloom filter: byte-identical to the ones Java wrote into every fixture base file, and
no false negatives for any key."""
import base64
import glob
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tms.hudi.bloom import FOOTER_KEY, TYPE_CODE_KEY, dynamic_bloom_filter, might_contain


def _tables_where(root, text: str) -> set[str]:
    return {str(p.parent.parent) for p in root.glob("*/.hoodie/hoodie.properties") if text in p.read_text()}


def _fixture_base_files(root, *, meta_fields: bool = True, version9: bool = False) -> list[str]:
    """Base files of the fixture tables that populate meta fields (or, with meta_fields=False, that do not),
    of table versions 6 and 8 (or, with version9, of version 9)."""
    virtual = _tables_where(root, "hoodie.populate.meta.fields=false")
    v9 = _tables_where(root, "hoodie.table.version=9")
    return sorted(f for f in glob.glob(f"{root}/**/*.parquet", recursive=True)
                  if "/.hoodie/" not in f and any(f.startswith(v + "/") for v in virtual) != meta_fields
                  and any(f.startswith(v + "/") for v in v9) == version9)


@pytest.mark.xfail(strict=True, reason="Hudi 1.1 (table version 9) sets other bits than Hudi 0.x/1.0 for the same "
                                      "keys and header: not yet understood")
def test_same_bytes_as_java_for_version_9_base_files(fixtures_root):
    files = _fixture_base_files(fixtures_root, version9=True)
    assert files
    for path in files:
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
        assert dynamic_bloom_filter(keys) == pq.read_metadata(path).metadata[FOOTER_KEY], path


def test_virtual_key_base_files_carry_no_bloom_filter(fixtures_root):
    """Java writes no record-key bloom filter (nor min/max keys) without meta fields."""
    files = _fixture_base_files(fixtures_root, meta_fields=False)
    assert files
    for path in files:
        assert FOOTER_KEY not in pq.read_metadata(path).metadata


def test_same_bytes_as_java_for_every_fixture_base_file(fixtures_root):
    files = _fixture_base_files(fixtures_root)
    assert len(files) > 10
    for path in files:
        footer = pq.read_metadata(path).metadata
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)  # in write order
        assert footer[TYPE_CODE_KEY] == b"DYNAMIC_V0"
        assert dynamic_bloom_filter(keys) == footer[FOOTER_KEY], path


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=40), min_size=0, max_size=50, unique=True))
def test_every_added_key_is_found(keys):
    serialized = dynamic_bloom_filter(pa.array(keys, pa.string()))
    assert all(might_contain(serialized, k) for k in keys)


@pytest.mark.parametrize("count,rows,active", [(59_999, 1, 59_999), (60_001, 2, 1), (130_000, 2, 70_000)])
def test_rows_grow_up_to_max_entries(count, rows, active):
    """60,000 keys per row, rows added while under 100,000 keys, then the rows take turns (Hudi's defaults)."""
    serialized = dynamic_bloom_filter(pa.array([f"k{i}" for i in range(count)]))
    assert struct.unpack_from(">iii", base64.b64decode(serialized), 13) == (60_000, active, rows)
    assert all(might_contain(serialized, f"k{i}") for i in (0, 59_999 % count, count // 2, count - 1))
