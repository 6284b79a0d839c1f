"""v6 log files on S3 (the moto server on loopback): an object store cannot append, so each log block a
writer adds to a file slice is a new log file version, never a rewrite of an object; rows read back by
TMS's reader and by hudi-rs equal the model."""
from __future__ import annotations

import pytest
from table_model import ModelledTable, rec

from tms.hudi.storage.table_storage import open_storage


def test_v6_log_blocks_on_s3_start_new_log_versions_and_read_back(s3_base):
    t = ModelledTable(f"{s3_base}/t", version=6)
    t.write([rec(i, 10) for i in range(6)], "insert")
    for ts in (20, 30, 40):
        t.write([rec(0, ts), rec(3, ts)])
    t.write([rec(3, 50)], "delete")

    [slice_] = [fs for fs in t.table().file_system_view().latest_slices() if fs.partition == "city=sf"]
    assert [(f.name.instant, f.name.version) for f in slice_.log_files] == [
        (slice_.base_instant, v) for v in (1, 2, 3, 4)], "one log version per block"
    assert not t.table().storage.appends
    t.check()


def test_appending_to_an_object_is_refused(s3_base):
    storage = open_storage(s3_base)
    storage.write_new("f.log", b"block 1")
    with pytest.raises(NotImplementedError, match="cannot append"):
        storage.append("f.log", b"block 2")
    assert storage.read_bytes("f.log") == b"block 1"
