"""Savepoints, as Hudi's SavepointActionExecutor writes them: `T.savepoint.inflight` (empty), then `T.savepoint`
(HoodieSavepointMetadata: the files of every file slice a reader at T reads), where T is the instant time of
the completed write it keeps. Clean keeps what a savepoint keeps (tms.planning.clean); a restore rolls the
table back to one (tms.execute.restore). Deleting one removes its completed file, then its inflight file."""
from __future__ import annotations

import time

from ..errors import HudiError
from ..timeline.instant import WRITE_ACTIONS, Instant
from ..timeline.serde import (
    SavepointMetadata,
    SavepointPartitionMetadata,
    parse_savepoint_metadata,
    serialize_savepoint_metadata,
)
from .hudi_table import HudiTable


class SavepointError(HudiError):
    """A savepoint that cannot be made or removed as asked."""


def savepoint_files(table: HudiTable, timestamp: str) -> dict[str, list[str]]:
    """Partition -> names of the base and log files of the file slices a reader at `timestamp` reads."""
    out: dict[str, list[str]] = {}
    for fs in table.file_system_view(as_of=timestamp).latest_slices():
        names = out.setdefault(fs.partition, [])
        if fs.base_file is not None:
            names.append(fs.base_file.file_name)
        names += [f.file_name for f in fs.log_files]
    return {p: sorted(names) for p, names in sorted(out.items())}


def latest_savepointable(table: HudiTable) -> str | None:
    """The latest completed write's instant time (what a savepoint "now" keeps)."""
    inst = table.timeline.last_of(WRITE_ACTIONS, completed=True)
    return inst.timestamp if inst else None


def create_savepoint(table: HudiTable, timestamp: str | None = None, *, user: str = "tms", comment: str = "",
                     now_ms: int | None = None) -> Instant:
    """Savepoint the completed write at `timestamp` (default: the latest). Refuses, before writing anything,
    an instant that is not a completed write, one that already has a savepoint, or one older than what the
    latest clean retains (Hudi's rule, Timeline.savepoint_bound)."""
    tl = table.timeline
    tl.reload(force=True)
    ts = timestamp or latest_savepointable(table)
    if ts is None:
        raise SavepointError(f"table {table.name} has no completed write to savepoint")
    inst = tl.get(ts)
    if inst is None or not inst.is_completed or inst.action not in WRITE_ACTIONS:
        raise SavepointError(f"instant {ts} of table {table.name} is not a completed write: only a completed "
                             "commit, delta commit or replace commit can be savepointed")
    if tl.savepoint_files(ts):
        raise SavepointError(f"instant {ts} of table {table.name} already has a savepoint")
    retained = tl.savepoint_bound()
    if retained is not None and ts < retained:
        raise SavepointError(f"instant {ts} of table {table.name} is older than what clean retained ({retained}): "
                             "its files may be gone")
    files = savepoint_files(table, ts)
    meta = SavepointMetadata(
        savepointed_by=user, savepointed_at=now_ms if now_ms is not None else int(time.time() * 1000),
        comments=comment,
        partition_metadata={p: SavepointPartitionMetadata(partition_path=p, savepoint_data_file=names)
                            for p, names in files.items()})
    return tl.write_savepoint(ts, serialize_savepoint_metadata(meta))


def read_savepoint(table: HudiTable, timestamp: str) -> SavepointMetadata:
    done = [i for i in table.timeline.savepoints() if i.timestamp == timestamp]
    if not done:
        raise SavepointError(f"table {table.name} has no savepoint at {timestamp}")
    return parse_savepoint_metadata(table.timeline.read(done[0]))


def delete_savepoint(table: HudiTable, timestamp: str) -> None:
    table.timeline.reload(force=True)
    if not table.timeline.savepoint_files(timestamp):
        raise SavepointError(f"table {table.name} has no savepoint at {timestamp}")
    table.timeline.delete_savepoint(timestamp)
