"""The file groups that pending plans hold (tms.hudi.fs_view.plans), as the file system view sees them."""
from tms.hudi.fs_view.plans import pending_compaction_groups
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.serde import CompactionOperation, CompactionPlan, serialize_compaction_plan


def test_a_null_partition_path_names_the_group_of_a_non_partitioned_table(tmp_path):
    """Hudi's schema lets a compaction operation's partitionPath be null. The group it holds is then
    ("", fileId), the key the view and the planners look groups up by: a (None, fileId) key made the
    group look free, so a second plan could take it."""
    path = str(tmp_path / "t")
    writer = create_table_for_records(path, [{"id": "a", "ts": 1}], table_type="MERGE_ON_READ", version=8,
                                      key=["id"], ordering=["ts"], partition=[])
    writer.write([{"id": "a", "ts": 1}, {"id": "b", "ts": 1}], "insert")
    writer.write([{"id": "a", "ts": 2}], "upsert")
    table = HudiTable.load(path)
    fs = next(fs for fs in table.file_system_view().latest_slices() if fs.log_files)
    plan = table.timeline.create_requested("compaction", serialize_compaction_plan(CompactionPlan(operations=[
        CompactionOperation(base_instant_time=fs.base_instant, file_id=fs.file_id, partition_path=None,
                            data_file_path=fs.base_file.file_name if fs.base_file else None,
                            delta_file_paths=[f.file_name for f in fs.log_files])])))

    assert pending_compaction_groups(table) == {("", fs.file_id): plan.timestamp}
    view = HudiTable.load(path).file_system_view()
    assert view.pending_compaction.get((fs.partition, fs.file_id)) == plan.timestamp
