"""Library pieces the planner relies on: replaced file groups in the file-system view, the partition walk,
and v6 writers that start a new log file version per delta commit (as Java does on object stores)."""
import shutil

from support import hudi_rs_table, rows
from table_model import TableModel

from tms.hudi.fs_view.view import partition_paths
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records

COLUMNS = ["_hoodie_record_key", "id", "name", "ts", "city"]


def _rec(i, ts):
    return {"id": i, "name": f"n{i}-{ts}", "ts": ts, "city": ["sf", "nyc"][i % 2]}


def test_replaced_file_groups_are_kept_apart(tmp_path, fixture_tables):
    path = shutil.copytree(fixture_tables["cow_v6_simplekeygen_nonhivestyle_overwritetable"], tmp_path / "t")
    view = HudiTable.load(str(path)).file_system_view()
    replaced = view.replaced_file_groups()
    assert replaced and {(g.partition, g.file_id) for g in replaced} == set(view.replaced)
    assert not {g.file_id for g in replaced} & {g.file_id for g in view.file_groups()}
    assert all(g.slices and g.slices[0].base_file for g in replaced)
    assert partition_paths(HudiTable.load(str(path))) == view.partitions


def test_v6_new_log_file_per_commit(tmp_path):
    path = tmp_path / "t"
    first = [_rec(i, 10) for i in range(4)]
    writer = create_table_for_records(str(path), first, table_type="MERGE_ON_READ", version=6, key=["id"],
                                      ordering=["ts"], partition=["city"], new_log_file_per_commit=True)
    model = TableModel("id", "city", "ts", event_time=True)
    for recs in (first, [_rec(0, 20), _rec(1, 20)], [_rec(0, 30)]):
        writer.write(recs)
        model.upsert(recs)
    sf = next(fs for fs in HudiTable.load(str(path)).file_system_view().latest_slices() if fs.partition == "city=sf")
    assert [(f.name.instant, f.name.version) for f in sf.log_files] == [(sf.base_instant, 1), (sf.base_instant, 2)]
    assert rows(hudi_rs_table(path), COLUMNS) == model.expected()
    assert rows(read_snapshot(HudiTable.load(str(path))), COLUMNS) == model.expected()
