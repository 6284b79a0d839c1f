"""Marking the log blocks of a rolled-back instant: a rollback command block (target: the instant) in a
new log file version of the same file slice, as Java does, so that no log file a writer may append to is
touched. Readers skip the target's blocks read before the command block; later blocks of the same instant
time (a retried attempt's) count."""
from __future__ import annotations

import posixpath

from ..errors import HudiError, InstantConflictError
from ..fs_view.file_names import LogFileName
from ..storage.table_storage import Storage
from .log_file import rollback_command_block


def write_rollback_block_file(storage: Storage, log_rel: str, target_instant: str, rollback_instant: str,
                              token: str) -> str:
    """A new version of `log_rel`'s series holding one rollback command block of `target_instant`;
    returns its path."""
    name = LogFileName.parse(log_rel)
    if name is None:
        raise HudiError(f"the rollback of {target_instant} marks {log_rel}, which is not a log file")
    folder = posixpath.dirname(log_rel)
    series = [n for n in (LogFileName.parse(i.name) for i in storage.listdir(folder))
              if n and n.file_id == name.file_id and n.instant == name.instant]
    version = max([n.version for n in series] + [name.version]) + 1
    block = rollback_command_block(target_instant, rollback_instant)
    while True:  # a writer may take the next version first: exclusive create, then the one after
        rel = posixpath.join(folder, str(LogFileName(name.file_id, name.instant, version, token)))
        try:
            storage.write_new(rel, block)
            return rel
        except (FileExistsError, InstantConflictError):
            version += 1
