"""Plan paths as Java and TMS's planner write them, resolved against the table's base path."""
import pytest

from tms.execute.paths import absolute, table_relative
from tms.hudi.errors import HudiError
from tms.hudi.storage import Storage


@pytest.mark.parametrize("path,partition,expected", [
    ("f.parquet", "city=sf", "city=sf/f.parquet"),                     # compaction plans: names in the partition
    (".f_1.log.1_0-1-2", "", ".f_1.log.1_0-1-2"),                      # non-partitioned table
    ("city=sf/f.parquet", "city=sf", "city=sf/f.parquet"),             # relative to the base path
    ("{base}/city=sf/f.parquet", "city=sf", "city=sf/f.parquet"),      # absolute (clean, clustering plans)
    ("file:{base}/city=sf/.f_1.log.1_0-1-2", "city=sf", "city=sf/.f_1.log.1_0-1-2"),  # rollback plans
])
def test_plan_paths_resolve_inside_the_table(tmp_path, path, partition, expected):
    storage = Storage(str(tmp_path / "t"))
    assert table_relative(storage, path.format(base=tmp_path / "t"), partition) == expected
    assert table_relative(storage, absolute(storage, expected), partition) == expected


@pytest.mark.parametrize("path", ["/elsewhere/f.parquet", "file:/elsewhere/t/f.parquet", "{base}x/f.parquet"])
def test_paths_outside_the_table_are_refused(tmp_path, path):
    with pytest.raises(HudiError, match="outside the table"):
        table_relative(Storage(str(tmp_path / "t")), path.format(base=tmp_path / "t"), "")
