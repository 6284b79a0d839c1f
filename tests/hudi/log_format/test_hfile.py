"""The HFile reader reads every HFile Hudi wrote into the fixtures' metadata tables (base files and the
contents of log blocks); the writer writes what Hudi 1.1's own writer writes, byte for byte."""
import struct

import pytest
from mdt_model import MDT_FIXTURES, unzip_mdt_fixture

from tms.hudi.log_format.hfile import HFileError, read_hfile, write_hfile
from tms.hudi.log_format.log_file import BlockType, read_log_file

# File-info entries Hudi's writers add before HFileWriterImpl adds its own.
HUDI_FILE_INFO = ("schema", "bloomFilterTypeCode", "minRecordKey", "maxRecordKey")


@pytest.fixture(scope="module")
def mdt_roots(tmp_path_factory):
    root = tmp_path_factory.mktemp("mdt_fixtures")
    return {name: unzip_mdt_fixture(name, root) for name in MDT_FIXTURES}


def _hfiles(base):
    """(path, HFile bytes) of every base file and every HFile data block under .hoodie/metadata."""
    out = []
    for path in sorted((base / ".hoodie" / "metadata").glob("*/*.hfile")):
        out.append((path, path.read_bytes()))
    for path in sorted((base / ".hoodie" / "metadata").glob("*/.*.log.*")):
        for block in read_log_file(path.read_bytes()):
            if block.block_type == BlockType.HFILE_DATA:
                out.append((path, block.content()))
    return out


def _rewrite(raw: bytes) -> bytes:
    h = read_hfile(raw)
    info = {k: h.file_info[k] for k in HUDI_FILE_INFO if k in h.file_info}
    created = struct.unpack(">q", h.file_info["hfile.CREATE_TIME_TS"])[0]
    return write_hfile(h.items(), file_info=info, meta=h.meta, create_time_ms=created)


@pytest.mark.parametrize("name", sorted(MDT_FIXTURES))
def test_reads_every_fixture_hfile(mdt_roots, name):
    files = _hfiles(mdt_roots[name])
    assert len(files) > 10
    keys_seen = 0
    for path, raw in files:
        h = read_hfile(raw)
        keys = h.keys()
        assert keys == sorted(keys), path                     # Hudi writes keys sorted
        assert len(keys) == h.trailer.entry_count
        if keys:
            last = h.file_info["hfile.LASTKEY"]   # row length + row (+ HBase key fields from HBase)
            assert last[2:2 + struct.unpack(">H", last[:2])[0]].decode() == keys[-1], path
        assert "schema" in h.file_info
        keys_seen += len(keys)
    assert keys_seen > 0


@pytest.mark.parametrize("name", sorted(n for n in MDT_FIXTURES if "v9" in n))
def test_rewrite_is_byte_identical_to_hudi_1_1(mdt_roots, name):
    files = _hfiles(mdt_roots[name])
    for path, raw in files:
        assert _rewrite(raw) == raw, path


def test_files_partition_holds_all_partitions_key(mdt_roots):
    base = mdt_roots["mor_v8_trips_8i3u1d"]
    h = read_hfile(next((base / ".hoodie/metadata/files").glob("*.hfile")).read_bytes())
    assert "__all_partitions__" in h.keys()


def test_round_trip_many_blocks_and_meta():
    entries = {f"key-{i:06d}": (b"v" * (i % 50)) + str(i).encode() for i in range(5000)}
    raw = write_hfile(list(entries.items())[::-1], file_info={"schema": b"{}"}, meta={"bloomFilter": b"\x01\x02"})
    h = read_hfile(raw)
    assert h.trailer.data_index_count > 1                     # split into 64 KiB blocks
    assert h.items() == sorted(entries.items())
    assert h.meta == {"bloomFilter": b"\x01\x02"}
    assert h.file_info["schema"] == b"{}"


def test_long_keys_round_trip():
    # Index entries of keys of 126 bytes and more need a multi-byte length: Hadoop's var-long, as readers read.
    entries = {("k" * n) + str(n): str(n).encode() for n in (1, 125, 126, 127, 300, 5000)}
    h = read_hfile(write_hfile(list(entries.items()), block_size=64))
    assert h.items() == sorted(entries.items())
    assert h.trailer.data_index_count == len(entries)


def test_empty_hfile_round_trips():
    h = read_hfile(write_hfile([]))
    assert h.entries == [] and h.trailer.entry_count == 0


def test_not_an_hfile_is_refused():
    with pytest.raises(HFileError):
        read_hfile(b"x" * 5000)
    with pytest.raises(HFileError):
        read_hfile(b"short")
