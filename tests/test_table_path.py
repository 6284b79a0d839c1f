"""Plan paths as Java and TMS's planner write them, resolved against the table's base path."""
import os

import pytest

from tms.hudi.errors import HudiError
from tms.hudi.storage.paths import is_under_roots, join, normalize_base_path, table_relative
from tms.hudi.storage.table_storage import open_storage


@pytest.mark.parametrize("path,partition,expected", [
    ("f.parquet", "city=sf", "city=sf/f.parquet"),                     # compaction plans: names in the partition
    (".f_1.log.1_0-1-2", "", ".f_1.log.1_0-1-2"),                      # non-partitioned table
    ("city=sf/f.parquet", "city=sf", "city=sf/f.parquet"),             # relative to the base path
    ("{base}/city=sf/f.parquet", "city=sf", "city=sf/f.parquet"),      # absolute (clean, clustering plans)
    ("file:{base}/city=sf/.f_1.log.1_0-1-2", "city=sf", "city=sf/.f_1.log.1_0-1-2"),  # rollback plans
])
def test_plan_paths_resolve_inside_the_table(tmp_path, path, partition, expected):
    base = str(tmp_path / "t")
    assert table_relative(base, path.format(base=base), partition) == expected
    assert table_relative(base, join(base, expected), partition) == expected
    assert table_relative(base, open_storage(base).uri(expected), partition) == expected


@pytest.mark.parametrize("path", ["/elsewhere/f.parquet", "file:/elsewhere/t/f.parquet", "{base}x/f.parquet"])
def test_paths_outside_the_table_are_refused(tmp_path, path):
    with pytest.raises(HudiError, match="outside the table"):
        table_relative(str(tmp_path / "t"), path.format(base=tmp_path / "t"), "")


def test_a_path_through_a_symlink_is_inside_the_table(tmp_path):
    (tmp_path / "real" / "t" / "p").mkdir(parents=True)
    os.symlink(tmp_path / "real", tmp_path / "link")
    base = normalize_base_path(str(tmp_path / "link" / "t"))
    assert base == str((tmp_path / "real" / "t").resolve())
    # Java writes plans with the path its writer was given, here through the symlink.
    assert table_relative(base, f"file:{tmp_path}/link/t/p/f.parquet") == "p/f.parquet"


@pytest.mark.parametrize("raw,expected", [
    ("/data/t/", "/data/t"), ("file:/data/t", "/data/t"), ("file:///data/t/./", "/data/t"),
    ("s3://bucket/a/../t/", "s3://bucket/t"), ("hdfs://nn:8020/w/t", "hdfs://nn:8020/w/t"),
])
def test_one_spelling_per_table(raw, expected):
    assert normalize_base_path(raw) == expected


@pytest.mark.parametrize("raw", ["relative/t", "s3:///t", ""])
def test_paths_that_name_no_table_are_refused(raw):
    with pytest.raises(ValueError):
        normalize_base_path(raw)


def test_a_symlink_escaping_the_roots_is_outside_them(tmp_path):
    (tmp_path / "roots" / "ok").mkdir(parents=True)
    (tmp_path / "elsewhere" / "t").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere" / "t", tmp_path / "roots" / "escape")
    roots = [str(tmp_path / "roots")]
    assert is_under_roots(normalize_base_path(str(tmp_path / "roots" / "ok")), roots)
    assert not is_under_roots(normalize_base_path(str(tmp_path / "roots" / "escape")), roots)
