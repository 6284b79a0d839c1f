"""Small-file routing: with `hoodie.parquet.small.file.limit` set, a table written in small batches keeps its
file groups (new records fill the partition's small file groups, as Hudi's writers route them), overflows into
new ones at `hoodie.parquet.max.file.size`, and reads back (by hudi-rs and the library) as the model says."""
import pytest
from planning_support import now, policy, run_compaction
from support import hudi_rs_table, rows
from table_model import TableModel

from tms.hudi.errors import HudiError
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.small_files import FileSizing
from tms.hudi.table.write_options import parse_write_options
from tms.hudi.table.writer import HudiWriter, create_table_for_records
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction

COLUMNS = ["_hoodie_record_key", "id", "name", "ts", "city"]
CITIES = ["sf", "nyc"]
ROUTED = FileSizing(small_file_limit=100 * 1024 * 1024)


def _rec(i: int, ts: int) -> dict:
    return {"id": i, "name": f"n{i}-{ts}", "ts": ts, "city": CITIES[i % 2]}


def _table(path, table_type: str, sizing: FileSizing | None) -> tuple[HudiWriter, TableModel]:
    first = [_rec(i, 1) for i in range(20)]
    create_table_for_records(str(path), first, table_type=table_type, version=8, key=["id"], ordering=["ts"],
                             partition=["city"])
    writer = HudiWriter(HudiTable.load(str(path)), file_sizing=sizing)
    model = TableModel("id", "city", "ts", event_time=True)
    model.commit(writer.write(first, "insert").instant)
    model.upsert(first)
    return writer, model


def _groups(path) -> dict[str, int]:
    view = HudiTable.load(str(path)).file_system_view()
    return {p: len(view.file_groups(p)) for p in view.partitions}


def _check(path, model: TableModel) -> None:
    expected = model.expected()
    assert rows(read_snapshot(HudiTable.load(str(path))), COLUMNS) == expected
    assert rows(hudi_rs_table(path), COLUMNS) == expected


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_batches_of_inserts_and_updates_fill_the_small_file_groups(tmp_path, table_type):
    path = tmp_path / "t"
    writer, model = _table(path, table_type, ROUTED)
    next_id = 20
    for ts in range(2, 8):
        batch = [_rec(i, ts) for i in range(next_id, next_id + 10)] + [_rec(i, ts) for i in range(0, next_id, 3)]
        next_id += 10
        result = writer.write(batch, "upsert")
        model.upsert(batch)
        model.commit(result.instant)
        _check(path, model)
    assert _groups(path) == {"city=nyc": 1, "city=sf": 1}


def test_without_a_limit_each_insert_batch_makes_new_file_groups(tmp_path):
    path = tmp_path / "t"
    writer, model = _table(path, "MERGE_ON_READ", None)
    for ts in range(2, 5):
        batch = [_rec(i, ts) for i in range(ts * 100, ts * 100 + 4)]
        model.upsert(batch)
        model.commit(writer.write(batch, "insert").instant)
    _check(path, model)
    assert _groups(path) == {"city=nyc": 4, "city=sf": 4}


def test_records_beyond_the_max_file_size_go_to_new_file_groups(tmp_path):
    path = tmp_path / "t"
    first = [_rec(i, 1) for i in range(0, 20, 2)]  # one partition
    create_table_for_records(str(path), first, table_type="COPY_ON_WRITE", version=8, key=["id"], ordering=["ts"],
                             partition=["city"]).write(first, "insert")
    model = TableModel("id", "city", "ts", event_time=True)
    model.upsert(first)
    size = HudiTable.load(str(path)).file_system_view().latest_slices()[0].base_size
    # The one file group has room for 5 records of the estimated size (no commit wrote enough to tell).
    sizing = FileSizing(small_file_limit=size + 1, max_file_size=size + 5 * 1000, record_size_estimate=1000)
    batch = [_rec(i, 2) for i in range(100, 116, 2)]  # 8: 5 fill the small group, 3 start a new one
    result = HudiWriter(HudiTable.load(str(path)), file_sizing=sizing).write(batch, "insert")
    model.upsert(batch)
    _check(path, model)
    assert sorted(s.num_writes for s in result.stats) == [3, 15]
    assert _groups(path) == {"city=sf": 2}


def test_a_file_group_being_compacted_takes_new_records_in_its_new_slice(tmp_path):
    path = tmp_path / "t"
    writer, model = _table(path, "MERGE_ON_READ", ROUTED)
    updates = [_rec(i, 2) for i in range(20)]
    model.upsert(updates)
    model.commit(writer.write(updates, "upsert").instant)
    planned = plan_compaction(HudiTable.load(str(path)), policy(), now(), force=True)
    assert planned is not None
    inserts = [_rec(i, 3) for i in range(100, 104)]
    model.upsert(inserts)
    model.commit(writer.write(inserts, "insert").instant)
    assert _groups(path) == {"city=nyc": 1, "city=sf": 1}
    _check(path, model)  # read with the slice the compaction opened
    run_compaction(HudiTable.load(str(path)), planned.instant)
    _check(path, model)
    assert _groups(path) == {"city=nyc": 1, "city=sf": 1}


def test_a_file_group_being_clustered_takes_no_new_records(tmp_path):
    path = tmp_path / "t"
    writer, model = _table(path, "COPY_ON_WRITE", ROUTED)
    planned = plan_clustering(HudiTable.load(str(path)), policy(), now(), force=True)
    assert planned is not None
    inserts = [_rec(i, 3) for i in range(100, 104)]
    model.upsert(inserts)
    model.commit(writer.write(inserts, "insert").instant)
    assert _groups(path) == {"city=nyc": 2, "city=sf": 2}  # the clustered groups took none of them
    _check(path, model)


def test_the_file_sizing_options_are_write_options(tmp_path):
    options = parse_write_options({"hoodie.parquet.small.file.limit": "1048576",
                                   "hoodie.parquet.max.file.size": "2097152"}, base_path=str(tmp_path),
                                  table_name="t")
    assert options.file_sizing == FileSizing(small_file_limit=1048576, max_file_size=2097152)
    with pytest.raises(HudiError, match="hoodie.parquet.max.file.size=0 must be at least 1"):
        FileSizing.from_options({"hoodie.parquet.max.file.size": "0"})
    with pytest.raises(HudiError, match="hoodie.parquet.small.file.limit=lots is not a number"):
        FileSizing.from_options({"hoodie.parquet.small.file.limit": "lots"})
