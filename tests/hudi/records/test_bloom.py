"""The record-key bloom filter: byte-identical to the ones Java wrote into every fixture base file, and
no false negatives for any key."""
import base64
import glob
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tms.hudi.records.bloom import (
    FOOTER_KEY,
    TYPE_CODE_KEY,
    dynamic_bloom_filter,
    might_contain,
    num_hashes,
    vector_size,
)


def _fixture_base_files(root, *, meta_fields: bool = True) -> list[str]:
    """Base files of the fixture tables that populate meta fields (or, with meta_fields=False, that do not)."""
    virtual = {str(p.parent.parent) for p in root.glob("*/.hoodie/hoodie.properties")
               if "hoodie.populate.meta.fields=false" in p.read_text()}
    return sorted(f for f in glob.glob(f"{root}/**/*.parquet", recursive=True)
                  if "/.hoodie/" not in f and any(f.startswith(v + "/") for v in virtual) != meta_fields)


def test_virtual_key_base_files_carry_no_bloom_filter(fixtures_root):
    """Java writes no record-key bloom filter (nor min/max keys) without meta fields."""
    files = _fixture_base_files(fixtures_root, meta_fields=False)
    assert files
    for path in files:
        assert FOOTER_KEY not in pq.read_metadata(path).metadata


def test_same_bytes_as_java_for_every_fixture_base_file(fixtures_root):
    """Tables versions 6, 8 and 9; their keys' UTF-8 lengths leave 0, 1 and 3 bytes after the 4-byte blocks."""
    files = _fixture_base_files(fixtures_root)
    assert len(files) > 10
    tails = set()
    for path in files:
        footer = pq.read_metadata(path).metadata
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)  # in write order
        tails |= {len(k.encode()) % 4 for k in keys.to_pylist()}
        assert footer[TYPE_CODE_KEY] == b"DYNAMIC_V0"
        assert dynamic_bloom_filter(keys) == footer[FOOTER_KEY], path
    assert tails == {0, 1, 3}


def _java_filter(keys: list[str], num_entries: int) -> bytes:
    """The filter Hadoop's DynamicBloomFilter (the code Hudi's InternalDynamicBloomFilter copies) builds."""
    java = shutil.which("java")
    assert java, "a JDK is needed (Spark's): java not found on PATH"
    jar, = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-api-*.jar"))
    bits = vector_size(num_entries)
    run = subprocess.run([java, "-cp", jar, str(Path(__file__).parent / "java" / "DynamicBloomOracle.java"),
                          str(bits), str(num_hashes(bits, num_entries)), str(num_entries)],
                         input="\n".join(k.encode().hex() for k in keys), capture_output=True, text=True,
                         check=True)
    return run.stdout.encode()


def test_same_bytes_as_hadoops_filter_for_any_key():
    """Keys of every UTF-8 length modulo 4, with bytes >= 0x80 (sign-extended by Java) in the blocks and in the
    tail, more keys than one row holds: byte-identical to the filter Java builds from the same keys."""
    rng = random.Random(20261123)
    alphabet = "abcXYZ019-_:/=é€𝄞\u0080\u00ff"
    keys = list(dict.fromkeys("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 23)))
                            for _ in range(4_000)))
    assert {len(k.encode()) % 4 for k in keys} == {0, 1, 2, 3}
    num_entries = 1_500   # three rows of the default false positive rate
    assert dynamic_bloom_filter(pa.array(keys), num_entries=num_entries) == _java_filter(keys, num_entries)


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
