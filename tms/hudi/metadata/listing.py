"""The data table's files as storage and the timeline give them: what the MDT's `files` partition must
list (and what an MDT is initialised with)."""
from __future__ import annotations

import posixpath

from ..fs_view.file_names import LogFileName
from ..log_format.log_file import read_log_file
from ..table.hudi_table import HudiTable

PARTITION_MARKER = ".hoodie_partition_metadata"
_BASE_EXTENSIONS = (".parquet", ".orc", ".hfile", ".lance")


def data_partitions(table: HudiTable) -> list[str]:
    """Partition paths ('' for the table's root): the folders holding Hudi's partition marker, as
    Hudi's own listing (`DirectoryInfo`) finds them; `.hoodie` is never searched."""
    st = table.storage
    out, todo = [], [""]
    while todo:
        rel = todo.pop()
        entries = st.listdir(rel)
        if any(not e.is_dir and e.name.startswith(PARTITION_MARKER) for e in entries):
            out.append(rel)
            continue
        todo.extend(e.path for e in entries if e.is_dir and not e.name.startswith("."))
    return sorted(out)


def file_instant(name: str) -> str | None:
    """The instant that wrote a data file (base: the name's last field; log: its instant field)."""
    log = LogFileName.parse(name)
    if log is not None:
        return log.instant
    if name.endswith(_BASE_EXTENSIONS) and not name.startswith("."):
        return posixpath.splitext(name)[0].rsplit("_", 1)[-1]
    return None


def committed_files(table: HudiTable, partitions: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Partition path -> {file name: size} of the base and log files written by committed instants (completed or
    archived). A v6 log file is named after its slice, not its writer: it counts when one of its blocks was
    written by a committed instant."""
    committed = table.timeline.committed_rule()
    out: dict[str, dict[str, int]] = {}
    for part in data_partitions(table) if partitions is None else partitions:
        files = {}
        for e in table.storage.listdir(part):
            if e.is_dir:
                continue
            ts = file_instant(e.name)
            if ts is None:
                continue
            if not table.config.traits.log_files_named_by_writer and LogFileName.parse(e.name):
                if any(committed(b.instant_time or "") for b in read_log_file(table.storage.read_bytes(e.path))):
                    files[e.name] = e.size
            elif committed(ts):
                files[e.name] = e.size
        out[part] = files
    return out
