"""The files a compaction or clustering attempt wrote, as rollback requests: those its markers name, plus any
base file of the instant found in the plan's partitions (a marker is written before its file, so the listing
is only a safety net). Compaction and clustering only ever write new base files named with their instant."""
from __future__ import annotations

from tms.hudi.errors import HudiError
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import RollbackRequest, parse_compaction_plan, parse_requested_replace_metadata

from .markers import marked_files


def attempt_rollback_requests(table: HudiTable, timestamp: str) -> list[RollbackRequest]:
    """One request per file the attempt of `timestamp` wrote: delete it."""
    storage = table.storage
    files = set(marked_files(storage, timestamp))
    for partition in _plan_partitions(table, timestamp):
        for info in storage.listdir(partition):
            name = BaseFileName.parse(info.name)
            if name is not None and name.instant == timestamp:
                files.add(info.path)
    requests = []
    for rel in sorted(files):
        partition, _, file_name = rel.rpartition("/")
        name = BaseFileName.parse(file_name)
        requests.append(RollbackRequest(partition_path=partition, file_id=name.file_id if name else "",
                                        latest_base_instant="", files_to_be_deleted=[storage.uri(rel)]))
    return requests


def _plan_partitions(table: HudiTable, timestamp: str) -> set[str]:
    data = table.timeline.read_plan(timestamp)
    instant = table.timeline.get(timestamp)
    if instant is not None and instant.action == Action.COMPACTION:
        return {op.partition_path or "" for op in parse_compaction_plan(data).operations}
    plan = parse_requested_replace_metadata(data).clustering_plan
    if plan is None:
        raise HudiError(f"replacecommit {timestamp} holds no clustering plan")
    return {s.partition_path or "" for g in plan.input_groups for s in g.slices}
