"""A scratch copy for a shadow canary: the table's timeline folder (its active timeline, `hoodie.properties`,
the metadata table) and exactly the files a pending compaction or clustering plan reads, with each touched
partition's partition metadata, copied to another base path. An engine then executes the plan there as it
would on the table; nothing of the table is written. Archived timelines and markers are left out: executing a
plan reads neither."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass

from tms.hudi.errors import HudiError
from tms.hudi.storage.paths import table_relative
from tms.hudi.storage.table_storage import walk_files
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import parse_compaction_plan, parse_requested_replace_metadata

from .errors import ExecutionError
from .restore_copy import CopyTask, copy_file

META_FOLDER = ".hoodie"
PARTITION_METADATA = ".hoodie_partition_metadata"  # and `.hoodie_partition_metadata.<format>`
_NOT_COPIED = ("archived", ".temp", "history")  # archived timelines (v6's, v8+'s LSM history) and markers


@dataclass(frozen=True)
class ScratchCopy:
    base_path: str
    files: int
    bytes_copied: int


def plan_input_files(table: HudiTable, instant: str) -> list[str]:
    """The files (relative to the base path) the pending compaction or clustering at `instant` reads."""
    inst = table.timeline.get(instant)
    if inst is None:
        raise ExecutionError(f"no instant {instant} on the timeline of {table.name}")
    data = table.timeline.read_plan(instant)
    files: list[str] = []
    if inst.action == Action.COMPACTION:
        for op in parse_compaction_plan(data).operations:
            partition = op.partition_path or ""
            names = ([op.data_file_path] if op.data_file_path else []) + list(op.delta_file_paths)
            files += [table_relative(table.base_path, name, partition) for name in names]
        return files
    if inst.action in (Action.CLUSTERING, Action.REPLACE_COMMIT):
        plan = parse_requested_replace_metadata(data).clustering_plan
        if plan is None:
            raise ExecutionError(f"replacecommit {instant} of {table.name} is not a clustering plan")
        for group in plan.input_groups:
            for s in group.slices:
                partition = s.partition_path or ""
                names = ([s.data_file_path] if s.data_file_path else []) + list(s.delta_file_paths)
                files += [table_relative(table.base_path, name, partition) for name in names]
        return files
    raise ExecutionError(f"instant {instant} of {table.name} is a {inst.action}: only compaction and clustering "
                         "plans run in shadow")


def scratch_copy(table: HudiTable, instant: str, target_path: str) -> ScratchCopy:
    """Copy what executing the plan at `instant` needs to `target_path`, which must hold no table."""
    target = table.context.open_storage(target_path)
    if target.exists(posixpath.join(META_FOLDER, "hoodie.properties")):
        raise HudiError(f"scratch path {target_path} already holds a table")
    inputs = plan_input_files(table, instant)
    partitions = sorted({posixpath.dirname(rel) for rel in inputs})
    partition_metadata = [info.path for p in partitions for info in table.storage.listdir(p)
                          if not info.is_dir and info.name.startswith(PARTITION_METADATA)]
    timeline = [info.path for info in walk_files(table.storage, META_FOLDER,
                                                 skip=lambda path: posixpath.basename(path) in _NOT_COPIED)]
    files = [*inputs, *partition_metadata, *timeline]
    copied = sum(copy_file(CopyTask(table.base_path, target_path, rel, table.context), "") for rel in files)
    return ScratchCopy(target_path, len(files), copied)
