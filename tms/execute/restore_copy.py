"""Restore a savepoint to a new base path: a new table holding the savepoint's file slices (the files its
savepoint metadata names, each partition's `.hoodie_partition_metadata`) and a timeline ending at it (every
instant completed at or before the savepointed commit, with its requested and inflight files). The source
table is only read. The metadata table is not copied (the copy's properties drop it; a writer builds a new
one). The data files are copied first, the timeline next, `hoodie.properties` last: until then no reader
takes the target for a table. A target holding anything else is refused before anything is written; one
holding only files of this copy without `hoodie.properties` (an earlier attempt of it stopped) is gone on
over, each of those files copied again.

Log blocks that a v6 writer appended to a copied log file after the savepoint stay in it: their instants
are not on the copied timeline, so readers skip them, as they skip any uncommitted block."""
from __future__ import annotations

import posixpath
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.errors import HudiError
from tms.hudi.metadata.reader import PARTITIONS_INFLIGHT_PROP, PARTITIONS_PROP
from tms.hudi.storage.table_storage import walk_files
from tms.hudi.table.hudi_table import PROPERTIES, HudiTable
from tms.hudi.table.properties import format_properties
from tms.hudi.table.savepoint import read_savepoint
from tms.hudi.timeline.instant import Action, Instant

from .errors import ExecutionError
from .runner import Runner

PARTITION_METADATA = ".hoodie_partition_metadata"


class CopyRefused(ExecutionError):
    """A copy that cannot be made as asked: nothing was written."""


@dataclass(frozen=True)
class CopyTask:
    source: str   # base URIs
    target: str
    rel: str      # relative to both
    context: HudiContext = DEFAULT_CONTEXT  # how both are reached (the table's)


@dataclass(frozen=True)
class CopyResult:
    target: str
    savepoint: str
    files: int
    bytes_copied: int

    def record(self) -> dict[str, Any]:
        return {"action": "restore", "savepoint": self.savepoint, "target_path": self.target, "files": self.files,
                "bytes_copied": self.bytes_copied}

    def summary(self) -> str:
        return (f"savepoint {self.savepoint} restored to {self.target}: {self.files} file(s), "
                f"{self.bytes_copied / 1e6:.1f} MB")


def copy_file(task: CopyTask, _token: str) -> int:
    """Copy one file (streamed), replacing what an earlier attempt left of it; returns its size."""
    src, dst = task.context.open_storage(task.source), task.context.open_storage(task.target)
    dst.delete(task.rel)
    with src.open(task.rel) as fin, dst.open_new(task.rel) as fout:
        shutil.copyfileobj(fin, fout, 8 << 20)
    return src.info(task.rel).size


def _timeline_files(table: HudiTable, savepoint: str) -> list[str]:
    """Timeline files (relative paths) of the instants completed at or before the savepointed commit, and
    the savepoint itself."""
    tl = table.timeline
    keep: list[Instant] = []
    for inst in tl.all_files():
        latest = tl.get(inst.timestamp)
        if inst.timestamp <= savepoint and latest is not None and latest.is_completed:
            keep.append(inst)
    keep += [i for i in tl.savepoint_files(savepoint).values() if i.action == Action.SAVEPOINT]
    return [tl.path_of(i) for i in keep]


def restore_copy(table: HudiTable, savepoint: str, target_path: str, runner: Runner,
                 check: Callable[[], None] = lambda: None) -> CopyResult:
    """Copy `table` as of its savepoint `savepoint` to a new table at `target_path`. `check` is called before
    `hoodie.properties` is written (a task's fence)."""
    tl = table.timeline
    tl.reload(force=True)
    if target_path.rstrip("/") == table.base_path.rstrip("/"):
        raise CopyRefused("the target path is the table's own base path: restore in place instead")
    meta = read_savepoint(table, savepoint)
    target = table.context.open_storage(target_path)
    if target.exists(PROPERTIES):
        raise CopyRefused(f"target path {target_path} is not empty: a restore writes a new table only")
    data = [posixpath.join(p.partition_path, n) if p.partition_path else n
            for p in meta.partition_metadata.values() for n in p.savepoint_data_file]
    missing = [rel for rel in data if not table.storage.exists(rel)]
    if missing:
        raise CopyRefused(f"savepoint {savepoint} of {table.name} names {len(missing)} file(s) that are gone "
                          f"(first: {missing[0]})")
    partitions = sorted({posixpath.dirname(rel) for rel in data})
    data += [posixpath.join(p, PARTITION_METADATA) if p else PARTITION_METADATA for p in partitions
             if table.storage.exists(posixpath.join(p, PARTITION_METADATA) if p else PARTITION_METADATA)]
    timeline = _timeline_files(table, savepoint)
    ours = set(data) | set(timeline)
    strangers = [i.path for i in walk_files(target) if i.path not in ours] if target.exists("") else []
    if strangers:
        raise CopyRefused(f"target path {target_path} is not empty ({strangers[0]}, ...): a restore writes a new "
                          "table only")
    source = table.base_path
    sizes = runner.map(copy_file, [CopyTask(source, target.base_uri, rel, table.context) for rel in data],
                       f"restore of {table.name} at savepoint {savepoint} to {target_path}")
    for rel in timeline:
        copy_file(CopyTask(source, target.base_uri, rel, table.context), "")
    props = {k: v for k, v in table.config.props.items() if k not in (PARTITIONS_PROP, PARTITIONS_INFLIGHT_PROP)}
    target.makedirs(".hoodie/.temp")
    check()
    target.write_new(PROPERTIES, format_properties(props, "Properties saved by TMS").encode())
    if not HudiTable.load(target.base_uri, context=table.context).timeline.is_completed(savepoint):
        raise HudiError(f"the copy at {target_path} lacks the savepointed commit {savepoint}")
    return CopyResult(target.base_uri, savepoint, len(data) + len(timeline) + 1,
                      sum(sizes) + sum(table.storage.info(r).size for r in timeline))
