"""Base files by format: Lance files written and read back through any storage (a local path, or a copy for
object stores), Parquet read through the storage's arrow file system, other formats refused."""
import pyarrow as pa
import pytest

from tms.hudi.errors import InstantConflictError, UnsupportedTableError
from tms.hudi.records.base_format import read_base_file, table_base_format, unreadable_format_reason, write_lance_file
from tms.hudi.storage.table_storage import open_storage
from tms.hudi.table.properties import TableConfig

ROWS = pa.table({"_hoodie_record_key": ["a", "b"], "n": [1, 2], "tags": [["x"], []]})
KEYS = {b"hoodie_min_record_key": b"a", b"hoodie_max_record_key": b"b"}


@pytest.mark.parametrize("where", ["local", "memory"])
def test_lance_round_trip_with_key_metadata(tmp_path, where):
    base = str(tmp_path / "t") if where == "local" else f"memory://lance-{tmp_path.name}/t"
    storage = open_storage(base)
    write_lance_file(storage, "p/f1_0-0-0_20240101000000000.lance", ROWS, KEYS)
    back = read_base_file(storage, "p/f1_0-0-0_20240101000000000.lance")
    assert back.to_pylist() == ROWS.to_pylist()
    assert {k: v for k, v in back.schema.metadata.items() if k.startswith(b"hoodie_")} == KEYS
    with pytest.raises((InstantConflictError, FileExistsError)):  # never over another attempt's file
        write_lance_file(storage, "p/f1_0-0-0_20240101000000000.lance", ROWS, KEYS)


@pytest.mark.parametrize("ext,fmt", [("orc", "ORC"), ("hfile", "HFILE"), ("avro", "AVRO")])
def test_other_formats_are_refused(tmp_path, ext, fmt):
    storage = open_storage(str(tmp_path))
    (tmp_path / f"f_0-0-0_20240101000000000.{ext}").write_bytes(b"not read")
    with pytest.raises(UnsupportedTableError, match=fmt):
        read_base_file(storage, f"f_0-0-0_20240101000000000.{ext}")
    assert unreadable_format_reason(fmt)


def test_table_base_format_defaults_to_parquet():
    assert table_base_format(TableConfig({})) == "PARQUET"
    assert table_base_format(TableConfig({"hoodie.table.base.file.format": "lance"})) == "LANCE"
